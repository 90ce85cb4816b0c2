// Speculative decoding for grammar-constrained rows, with the real tiny decoder on the native
// paged kernel and the real grammar worker: n-gram proposals are checked under the grammar's
// mask at every proposed position (masks computed on the grammar worker during the forward pass,
// the matcher rolled back to what it held, then caught up over what the check kept). A greedy
// constrained row gives exactly its tokens without speculation, so does a seeded sampled one and
// one asking for logprobs (with the same logprobs), and every output is valid under its grammar —
// one held by the string guard too (lengths and distinct items: its cursor follows the proposals
// and rolls back with them).
// The random-weight model under an integer-array schema repeats itself, so proposals hold.
// A grammar worker that dies while it computes a speculating row's masks (the masks job that
// carries the row's proposals, or a candidate-try job of a row that has proposed) ends only that
// row, in the same step, with its proposals' KV rolled back; a free speculating row beside it
// keeps its tokens, and the next constrained request gets a fresh worker.
import { join } from 'node:path';
import type { Worker } from 'node:worker_threads';
import { beforeAll, describe, expect, it } from 'vitest';
import type { GenerateRequest, GrammarSpec, SamplingParams, StepOutput, TokenLogprob } from '../../../src/contracts/generate.js';
import type { TextTokenizer } from '../../../src/contracts/tokenizer.js';
import { EngineCore, type EngineConfig } from '../../../src/engine-worker/engine-core.js';
import { openModelRunner } from '../../../src/runners/create-runner.js';
import { createTokenizer, readModelFiles } from '../../../src/tokenizer/model-files.js';
import { DEFAULT_REPOSITORY } from '../../../models/default-repository.js';
import type { MaskJob, ToGrammarWorker } from '../../../src/grammar-worker/entry.js';
import { GREEDY_SAMPLING } from '../../support/sampling.js';

const VERSION_DIR = join(DEFAULT_REPOSITORY, 'qwen3-tiny', '1');
const IM_END = 151_645;
const INTEGERS: GrammarSpec = {
  kind: 'json_schema',
  schema: '{"type":"object","properties":{"a":{"type":"array","items":{"type":"integer"},"minItems":3,"maxItems":40}},"required":["a"],"additionalProperties":false}',
};
const CHOICES: GrammarSpec = { kind: 'choice', choices: ['yes yes yes yes', 'no no no no no', 'maybe'] };
/** Lengths and uniqueness the string guard holds beside the grammar (src/grammar/string-guard.ts): its cursor rolls back with the proposals. */
const GUARDED: GrammarSpec = {
  kind: 'json_schema',
  schema:
    '{"type":"object","properties":{"w":{"type":"array","items":{"type":"string","minLength":9,"maxLength":12},"uniqueItems":true,"minItems":2,"maxItems":4}},"required":["w"],"additionalProperties":false}',
};
const prompt = (seed: number, length: number) => Array.from({ length }, (_, i) => (seed * 7919 + i * 104_729) % 150_000);

const request = (id: string, promptIds: number[], grammar: GrammarSpec | null, sampling: Partial<SamplingParams> = {}, maxTokens = 160): GenerateRequest => ({
  id,
  promptTokenIds: promptIds,
  sampling: { ...GREEDY_SAMPLING, ...sampling },
  priority: 0,
  cacheSalt: null,
  stop: { maxTokens, minTokens: 0, eosTokenIds: [IM_END], ignoreEos: !grammar, stopTokenIds: [] },
  ...(grammar ? { grammar } : {}),
});

const config = (speculative: boolean): EngineConfig => ({
  modelPath: join(VERSION_DIR, 'onnx', 'model_paged.segments'),
  device: 'cpu',
  intraOpNumThreads: 1,
  maxNumSeqs: 8,
  maxNumBatchedTokens: 64,
  maxModelLen: 512,
  blockSize: 4,
  kvCacheBytes: 4 << 20,
  enablePrefixCaching: true,
  sampleableVocabSize: 151_669,
  tokenizerPath: join(VERSION_DIR, 'tokenizer.json'),
  ...(speculative ? { speculative: { method: 'ngram', numSpeculativeTokens: 4, promptLookupMin: 1, promptLookupMax: 3, disableByBatchSize: 8 } } : {}),
});

interface Run {
  readonly tokens: Map<string, number[]>;
  readonly logprobs: Map<string, TokenLogprob[]>;
  readonly reasons: Map<string, string | null>;
  readonly outputs: StepOutput[];
}

async function open(speculative: boolean, log: (line: string) => void = () => {}): Promise<EngineCore> {
  const c = config(speculative);
  return EngineCore.create(c, await openModelRunner(c), log);
}

async function run(speculative: boolean, requests: readonly GenerateRequest[]): Promise<Run> {
  const engine = await open(speculative);
  const result: Run = { tokens: new Map(), logprobs: new Map(), reasons: new Map(), outputs: [] };
  try {
    for (const r of requests) engine.add(r);
    for (let step = 0; engine.hasWork(); step++) {
      expect(step).toBeLessThan(2_000);
      const output = await engine.step();
      expect(output.rejections).toEqual([]);
      result.outputs.push(output);
      for (const u of output.updates) {
        result.tokens.set(u.requestId, [...(result.tokens.get(u.requestId) ?? []), ...u.newTokenIds]);
        if (u.logprobs) result.logprobs.set(u.requestId, [...(result.logprobs.get(u.requestId) ?? []), ...u.logprobs]);
        result.reasons.set(u.requestId, u.finishReason);
      }
      engine.checkIntegrity();
    }
  } finally {
    await engine.release();
  }
  return result;
}

let tokenizer: TextTokenizer;
beforeAll(async () => {
  tokenizer = createTokenizer(await readModelFiles(VERSION_DIR));
});
/** The output's text without its final stop token. */
const text = (ids: readonly number[]): string =>
  tokenizer.decode(
    ids.filter((id) => id !== IM_END),
    { skip_special_tokens: false },
  );

describe('speculative decoding of grammar-constrained rows', () => {
  it('gives greedy, seeded sampled and logprobs rows their tokens without speculation, valid under their grammar, with proposals accepted', async () => {
    const requests = [
      request('greedy-json', prompt(1, 9), INTEGERS),
      request('greedy-json-2', prompt(2, 5), INTEGERS),
      request('choice', prompt(3, 7), CHOICES),
      request('sampled-json', prompt(4, 6), INTEGERS, { temperature: 0.5, topK: 8, seed: 5 }),
      request('logprobs-json', prompt(5, 8), INTEGERS, { logprobs: true, topLogprobs: 1, frequencyPenalty: 0.05 }),
      request('guarded-json', prompt(6, 7), GUARDED),
    ];
    const without = await run(false, requests);
    const withSpec = await run(true, requests);
    expect(withSpec.tokens).toEqual(without.tokens);
    expect(withSpec.reasons).toEqual(without.reasons);
    for (const [id, logprobs] of withSpec.logprobs) {
      const plain = without.logprobs.get(id)!;
      expect(logprobs.map((l) => l.tokenId)).toEqual(plain.map((l) => l.tokenId));
      logprobs.forEach((l, i) => expect(l.logprob, `${id} ${i}`).toBeCloseTo(plain[i]!.logprob, 3));
    }
    for (const r of requests) {
      const output = text(withSpec.tokens.get(r.id)!);
      if (r.grammar === CHOICES) expect(['yes yes yes yes', 'no no no no no', 'maybe']).toContain(output);
      else if (r.grammar === GUARDED) {
        const { w } = JSON.parse(output) as { w: string[] };
        expect(new Set(w).size, output).toBe(w.length);
        for (const item of w) expect([...item].length, output).toBeGreaterThanOrEqual(9);
        for (const item of w) expect([...item].length, output).toBeLessThanOrEqual(12);
      } else {
        const value = JSON.parse(output) as { a: unknown[] };
        expect(Object.keys(value)).toEqual(['a']);
        for (const item of value.a) expect(Number.isInteger(item), output).toBe(true);
      }
    }
    const final = withSpec.outputs.flatMap((o) => o.updates).filter((u) => u.finishReason !== null);
    const accepted = (id: string) => final.find((u) => u.requestId === id)!.specDecode?.numAcceptedTokens ?? 0;
    for (const id of ['greedy-json', 'greedy-json-2', 'logprobs-json', 'choice']) expect(accepted(id), id).toBeGreaterThan(0);
    // No more steps for the same tokens (the longest row may be one whose proposals fail).
    expect(withSpec.outputs.length).toBeLessThanOrEqual(without.outputs.length);
  }, 180_000);
});

type GrammarJob = Extract<ToGrammarWorker, { type: 'masks' | 'try' }>;

/**
 * Wraps the worker's postMessage so that the worker dies with the first of `victim`'s mask or try
 * jobs that `matches` picks in flight; counts the victim's jobs that carried proposals.
 */
function killOn(
  worker: Worker,
  victim: string,
  matches: (job: GrammarJob, proposedBefore: number) => boolean,
): { readonly thread: Worker; readonly killed: () => boolean; readonly proposedJobs: () => number } {
  const post = worker.postMessage.bind(worker);
  let killed = false;
  let proposed = 0;
  worker.postMessage = (message: ToGrammarWorker) => {
    const row = message.type === 'masks' || message.type === 'try' ? (message.rows as readonly MaskJob[]).find((r) => r.requestId === victim) : undefined;
    if (!killed && row && matches(message as GrammarJob, proposed)) {
      // Terminated before the job reaches it: the job is in flight when the worker dies, never
      // answered (terminating after posting races the worker's reply, which small jobs win).
      killed = true;
      void worker.terminate();
    }
    if (row?.drafts?.length) proposed++;
    post(message);
  };
  return { thread: worker, killed: () => killed, proposedJobs: () => proposed };
}

const kills: [string, (job: GrammarJob, proposedBefore: number) => boolean][] = [
  // The row proposed this step: its job is a masks job with the mask at each proposal.
  ['while it computes the masks at its proposals', (job) => job.type === 'masks' && job.rows.some((r) => r.requestId === 'victim' && (r.drafts?.length ?? 0) > 0)],
  // A step where the speculating row found nothing to propose: its greedy candidates are tried first.
  ['while it tries the candidates of a row that has proposed before', (job, proposedBefore) => job.type === 'try' && proposedBefore > 0],
];

describe('a grammar worker that dies under a speculating constrained row', () => {
  it.each(kills)(
    'ends only that row, in that step, with its KV rolled back; a free speculating row keeps its tokens; the next constrained request gets a fresh worker (%s)',
    async (_, matches) => {
      // A free row that copies: the model's own greedy continuation of a prompt, fed back as part of the prompt.
      const seed = prompt(11, 6);
      const first = await run(false, [request('seed', seed, null, {}, 24)]);
      const copying = [...seed, ...first.tokens.get('seed')!, ...seed, ...first.tokens.get('seed')!.slice(0, 3)];
      const free = request('free', copying, null, {}, 60);
      const alone = await run(false, [free]);

      const logs: string[] = [];
      const engine = await open(true, (line) => logs.push(line));
      const tokens = new Map<string, number[]>();
      const reasons = new Map<string, string | null>();
      const finishStep = new Map<string, number>();
      const drafted = new Map<string, number>();
      let killStep = -1;
      try {
        engine.add(free);
        engine.add(request('victim', prompt(1, 9), INTEGERS));
        // The worker starts with the victim's compile, before any masks job.
        const kill = killOn(engine.grammarWorkerThread!, 'victim', matches);
        for (let step = 0; engine.hasWork(); step++) {
          expect(step).toBeLessThan(2_000);
          const killedBefore = kill.killed();
          const output = await engine.step();
          if (kill.killed() && !killedBefore) killStep = step;
          expect(output.rejections).toEqual([]);
          for (const u of output.updates) {
            tokens.set(u.requestId, [...(tokens.get(u.requestId) ?? []), ...u.newTokenIds]);
            reasons.set(u.requestId, u.finishReason);
            if (u.finishReason === null) continue;
            finishStep.set(u.requestId, step);
            drafted.set(u.requestId, u.specDecode?.numDrafts ?? 0);
          }
          engine.checkIntegrity();
        }
        expect(kill.killed()).toBe(true);
        // The row proposed before the try job that killed the worker, or in the job itself.
        expect(kill.proposedJobs()).toBeGreaterThan(0);
        // The job failed (the row ended in the step that posted it), not a later step noticing the exit.
        expect(finishStep.get('victim')).toBe(killStep);
        expect(reasons.get('victim')).toBe('abort');
        expect(logs.some((l) => /request victim: the grammar worker stopped/.test(l))).toBe(true);
        expect(tokens.get('free')).toEqual(alone.tokens.get('free'));
        expect(drafted.get('free')).toBeGreaterThan(0);
        // Every block back, the proposals' included.
        expect(engine.stats().kvCacheUsage).toBe(0);

        engine.add(request('after', prompt(2, 5), INTEGERS));
        for (let step = 0; engine.hasWork(); step++) {
          expect(step).toBeLessThan(2_000);
          const output = await engine.step();
          expect(output.rejections).toEqual([]);
          for (const u of output.updates) {
            tokens.set(u.requestId, [...(tokens.get(u.requestId) ?? []), ...u.newTokenIds]);
            reasons.set(u.requestId, u.finishReason);
          }
          engine.checkIntegrity();
        }
        expect(engine.grammarWorkerThread).not.toBe(kill.thread);
        expect(reasons.get('after')).toBe('stop');
        const value = JSON.parse(text(tokens.get('after')!)) as { a: unknown[] };
        for (const item of value.a) expect(Number.isInteger(item)).toBe(true);
        expect(engine.stats().kvCacheUsage).toBe(0);
      } finally {
        await engine.release();
      }
    },
    180_000,
  );
});
