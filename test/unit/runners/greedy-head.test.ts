// The paged runners' view of a model's two sampled heads (src/runners/greedy-head.ts): the names
// the builders write (kernels/greedy-tokens.ts) and the runners read are the same; a model with
// the greedy head gets its sampled positions on the head a call reads and none on the other, with
// the sampleable bound clamped to the vocabulary; a paged model exported before the head has the
// logits head only, fed as before, and the runners then offer no executeGreedy.

import { describe, expect, it } from 'vitest';
import { GREEDY_TOKENS } from '../../../kernels/greedy-tokens.js';
import type { SessionMetadata, TensorInfo } from '../../../src/contracts/worker-messages.js';
import { SampledHeads } from '../../../src/runners/greedy-head.js';
import { GREEDY_HEAD_NAMES } from '../../../src/runners/paged-layout.js';
import type { RawTensor } from '../../../src/runtime/model-session.js';

const io = (name: string): TensorInfo => ({ name, type: 'int64', shape: ['n'] }) as TensorInfo;
const WITH_HEAD: SessionMetadata = { inputs: ['logits_indices', 'greedy_indices', 'sampleable_vocab'].map(io), outputs: ['logits', 'greedy_token_ids', 'new_key.0'].map(io) };
const WITHOUT_HEAD: SessionMetadata = { inputs: ['logits_indices'].map(io), outputs: ['logits', 'new_key.0'].map(io) };
const positions: RawTensor = { type: 'int64', dims: [3], data: BigInt64Array.of(4n, 9n, 12n) };
const values = (t: RawTensor | undefined) => Array.from((t?.data ?? []) as BigInt64Array, Number);

describe('SampledHeads', () => {
  it('reads the names the builders write', () => {
    expect(GREEDY_HEAD_NAMES).toEqual(GREEDY_TOKENS);
  });

  it('feeds the positions to the head a call reads and none to the other, and fetches all but the unread head', () => {
    const heads = SampledHeads.of(WITH_HEAD, 1000);
    expect(heads.hasGreedy).toBe(true);
    const logits = heads.feeds(positions, { kind: 'logits' });
    expect([values(logits['logits_indices']), values(logits['greedy_indices']), values(logits['sampleable_vocab'])]).toEqual([[4, 9, 12], [], [1000]]);
    const greedy = heads.feeds(positions, { kind: 'greedy', sampleableVocab: 976 });
    expect([values(greedy['logits_indices']), values(greedy['greedy_indices']), values(greedy['sampleable_vocab'])]).toEqual([[], [4, 9, 12], [976]]);
    // A bound past the vocabulary means the whole of it.
    expect(values(heads.feeds(positions, { kind: 'greedy', sampleableVocab: 5000 })['sampleable_vocab'])).toEqual([1000]);
    expect(heads.fetched({ kind: 'logits' })).toEqual(['logits', 'new_key.0']);
    expect(heads.fetched({ kind: 'greedy' })).toEqual(['greedy_token_ids', 'new_key.0']);
  });

  it('hands each sampled request the greedy token of each of its rows (several for a checked proposal), the last its next token', () => {
    const tokens = new Map<string, number[]>();
    SampledHeads.of(WITH_HEAD, 1000).read(
      { greedy_token_ids: { type: 'int64', dims: [3], data: BigInt64Array.of(7n, 8n, 9n) } },
      [
        { requestId: 'a', first: 0, count: 1 },
        { requestId: 'b', first: 1, count: 2 },
      ],
      { kind: 'greedy', sampleableVocab: 1000, tokens },
    );
    expect([...tokens]).toEqual([
      ['a', [7]],
      ['b', [8, 9]],
    ]);
  });

  it('a paged model without the head keeps its one logits input', () => {
    const heads = SampledHeads.of(WITHOUT_HEAD, 1000);
    expect(heads.hasGreedy).toBe(false);
    expect(Object.keys(heads.feeds(positions, { kind: 'logits' }))).toEqual(['logits_indices']);
  });
});
