// Speculative proposals on the real grammar worker (MaskJob.drafts), with the tiny model's Qwen3
// vocabulary: a mask job carrying proposals returns the mask after each one its grammar takes,
// stopping at one it refuses or after a stop token that ends it, and leaves the matcher where the
// catch-up put it — so the engine's next job catches it up over the proposals the check kept.
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { GrammarSpec } from '../../../src/contracts/generate.js';
import { maskAllows } from '../../../src/contracts/token-mask.js';
import { GrammarWorkerClient } from '../../../src/engine-worker/grammar-client.js';
import { createTokenizer, readModelFiles } from '../../../src/tokenizer/model-files.js';
import { DEFAULT_REPOSITORY } from '../../../models/default-repository.js';

const VERSION_DIR = join(DEFAULT_REPOSITORY, 'qwen3-tiny', '1');
const IM_END = 151_645;
const CHOICES: GrammarSpec = { kind: 'choice', choices: ['hello world', 'hello there'] };

const lost: string[] = [];
const client = new GrammarWorkerClient({ tokenizerPath: join(VERSION_DIR, 'tokenizer.json'), vocabSize: 151_936 }, (reason) => lost.push(reason));
afterAll(() => client.close());

let hello: number;
let world: number;
let there: number;
beforeAll(async () => {
  const tokenizer = createTokenizer(await readModelFiles(VERSION_DIR));
  const ids = (text: string) => tokenizer.encode(text, { add_special_tokens: false }).ids;
  [hello, world] = ids('hello world') as [number, number];
  there = ids('hello there')[1]!;
  expect(ids('hello world')).toEqual([hello, world]);
  expect(ids('hello there')).toEqual([hello, there]);
});

const job = async (requestId: string, rollBack: number, accept: number[], drafts?: number[]) => (await client.masks([{ requestId, rollBack, accept, ...(drafts ? { drafts } : {}) }])).masks[0]!;

it('masks each proposal the grammar takes, stops at a refused one or the grammar’s end, and leaves the matcher at the catch-up', async () => {
  await client.open('r', CHOICES, [IM_END]);
  // Every proposal taken, the last one a stop token that ends the grammar: no mask after it.
  const taken = await job('r', 0, [], [hello, world, IM_END, hello]);
  expect(taken.refused).toBe(false);
  expect(taken.accepted).toBe(0);
  expect(maskAllows(taken.mask!, hello)).toBe(true);
  expect(taken.draftMasks).toHaveLength(2);
  const [afterHello, afterWorld] = taken.draftMasks!;
  expect([world, there].map((t) => maskAllows(afterHello!, t))).toEqual([true, true]);
  expect(maskAllows(afterHello!, IM_END)).toBe(false);
  expect([world, there, IM_END].map((t) => maskAllows(afterWorld!, t))).toEqual([false, false, true]);

  // A proposal the grammar refuses ends them: one mask, after the proposal before it.
  const refused = await job('r', 0, [hello], [world, hello, world]);
  expect(refused.accepted).toBe(1);
  expect(maskAllows(refused.mask!, there)).toBe(true);
  expect(refused.draftMasks).toHaveLength(1);
  expect(maskAllows(refused.draftMasks![0]!, IM_END)).toBe(true);

  // The matcher holds the catch-up only ('hello'): the check kept ' there', which it now takes.
  const next = await job('r', 0, [there]);
  expect(next.refused).toBe(false);
  expect(next.accepted).toBe(2);
  expect(maskAllows(next.mask!, IM_END)).toBe(true);
  expect(maskAllows(next.mask!, world)).toBe(false);
  expect(lost).toEqual([]);
}, 60_000);
