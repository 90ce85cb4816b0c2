// The grammar worker (src/grammar-worker) with the real tiny decoder: compiles run beside the
// step loop rather than in it, an abort during a compile ends the request cleanly, a grammar
// worker that dies ends only its constrained rows (the next constrained request gets a fresh
// worker), and thinking blocks (GenerateRequest.thinking) are closed at their budget, with the
// grammar applied to the answer after them.
import * as ort from 'onnxruntime-node';
import { join } from 'node:path';
import type { Worker } from 'node:worker_threads';
import { beforeAll, describe, expect, it } from 'vitest';
import type { GenerateRequest, GrammarSpec, SamplingParams, StepOutput, ThinkingSpec } from '../../../src/contracts/generate.js';
import type { TextTokenizer } from '../../../src/contracts/tokenizer.js';
import { EngineCore, type EngineConfig } from '../../../src/engine-worker/engine-core.js';
import { openModelRunner } from '../../../src/runners/create-runner.js';
import { createTokenizer, readModelFiles } from '../../../src/tokenizer/model-files.js';
import { DEFAULT_REPOSITORY } from '../../../models/default-repository.js';
import { greedy } from '../../support/decoder.js';
import { GREEDY_SAMPLING } from '../../support/sampling.js';

const VERSION_DIR = join(DEFAULT_REPOSITORY, 'qwen3-tiny', '1');
const MODEL = join(VERSION_DIR, 'onnx', 'model.onnx');
const IM_END = 151_645;
const THINK = 151_667;
const END_THINK = 151_668;
const CHOICES: GrammarSpec = { kind: 'choice', choices: ['yes', 'no', 'maybe'] };
/** A grammar that keeps a row constrained for 60+ tokens. */
const LONG_JSON: GrammarSpec = { kind: 'json_schema', schema: '{"type":"object","properties":{"a":{"type":"array","items":{"type":"integer"},"minItems":60}},"required":["a"]}' };
const prompt = (seed: number, length: number) => Array.from({ length }, (_, i) => (seed * 7919 + i * 104_729) % 150_000);

interface Options {
  readonly grammar?: GrammarSpec;
  readonly thinking?: ThinkingSpec;
  readonly sampling?: SamplingParams;
}
const request = (id: string, promptIds: number[], maxTokens: number, options: Options = {}): GenerateRequest => ({
  id,
  promptTokenIds: promptIds,
  sampling: options.sampling ?? GREEDY_SAMPLING,
  priority: 0,
  cacheSalt: null,
  stop: { maxTokens, minTokens: 0, eosTokenIds: [IM_END], ignoreEos: !options.grammar, stopTokenIds: [] },
  ...(options.grammar ? { grammar: options.grammar } : {}),
  ...(options.thinking ? { thinking: options.thinking } : {}),
});

const config: EngineConfig = {
  modelPath: MODEL,
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
};
const open = async (logs: string[] = []): Promise<EngineCore> => EngineCore.create(config, await openModelRunner(config), (l) => logs.push(l));

interface Finished {
  tokens: number[];
  reason: string | null;
}

class Driver {
  readonly results = new Map<string, Finished>();
  readonly rejections: StepOutput['rejections'][number][] = [];
  constructor(readonly engine: EngineCore) {}

  async step(): Promise<StepOutput> {
    const output = await this.engine.step();
    this.rejections.push(...output.rejections);
    for (const u of output.updates) {
      const r = this.results.get(u.requestId) ?? { tokens: [], reason: null };
      r.tokens.push(...u.newTokenIds);
      r.reason = u.finishReason;
      this.results.set(u.requestId, r);
    }
    this.engine.checkIntegrity();
    return output;
  }

  async untilIdle(): Promise<void> {
    for (let i = 0; i < 5000 && this.engine.hasWork(); i++) await this.step();
    this.rejections.push(...this.engine.flush().rejections);
  }

  async until(done: () => boolean): Promise<void> {
    for (let i = 0; i < 5000 && !done(); i++) await this.step();
    expect(done()).toBe(true);
  }
}

let tokenizer: TextTokenizer;
let session: ort.InferenceSession;
beforeAll(async () => {
  tokenizer = createTokenizer(await readModelFiles(VERSION_DIR));
  session = await ort.InferenceSession.create(MODEL, { intraOpNumThreads: 1 });
}, 120_000);

const text = (ids: readonly number[]): string => tokenizer.decode([...ids], { skip_special_tokens: false });

describe('the grammar worker', () => {
  it('compiles beside the step loop: a free request keeps stepping while the first grammar builds', async () => {
    const engine = await open();
    const driver = new Driver(engine);
    engine.add(request('free', prompt(1, 6), 400));
    await driver.step();
    // The first constrained request builds the tokenizer info (≈ 1 s) and compiles: off this thread.
    engine.add(request('json', prompt(2, 6), 40, { grammar: { kind: 'json_schema', schema: '{"type":"object","properties":{"a":{"type":"string","maxLength":30}},"required":["a"]}' } }));
    const freeTokensAt = () => driver.results.get('free')?.tokens.length ?? 0;
    const before = freeTokensAt();
    await driver.until(() => driver.results.has('json') || driver.rejections.length > 0);
    const during = freeTokensAt() - before;
    console.log(`free request tokens while the first grammar compiled: ${during}`);
    expect(during).toBeGreaterThan(20);
    await driver.untilIdle();
    expect(driver.rejections).toEqual([]);
    expect(driver.results.get('free')?.tokens).toEqual(await greedy(session, ort, prompt(1, 6), 400));
    expect(['stop', 'length']).toContain(driver.results.get('json')?.reason);
    expect(engine.stats().kvCacheUsage).toBe(0);
    await engine.release();
  }, 300_000);

  it('an abort while the grammar compiles ends the request with "abort" and leaves nothing behind', async () => {
    const engine = await open();
    const driver = new Driver(engine);
    engine.add(request('free', prompt(3, 6), 30));
    engine.add(request('aborted', prompt(4, 6), 30, { grammar: CHOICES }));
    engine.abort('aborted');
    await driver.untilIdle();
    expect(driver.results.get('aborted')).toEqual({ tokens: [], reason: 'abort' });
    expect(driver.results.get('free')?.tokens).toEqual(await greedy(session, ort, prompt(3, 6), 30));
    expect(engine.stats().kvCacheUsage).toBe(0);
    // The same id compiles again (its matcher was released, not leaked under the id).
    engine.add(request('aborted', prompt(4, 6), 30, { grammar: CHOICES }));
    await driver.untilIdle();
    expect(driver.rejections).toEqual([]);
    expect(['yes', 'no', 'maybe']).toContain(text(driver.results.get('aborted')!.tokens.slice(0, -1)));
    await engine.release();
  }, 300_000);

  /** Ways the grammar worker dies under a constrained row: terminated between jobs, or with a candidate-try job in flight. */
  const kills: [string, (worker: Worker) => Promise<() => boolean>][] = [
    [
      'between jobs',
      async (worker) => {
        await worker.terminate();
        return () => true;
      },
    ],
    [
      "while it tries a row's candidates",
      async (worker) => {
        const post = worker.postMessage.bind(worker);
        let killedDuringTry = false;
        worker.postMessage = (message: { type?: string }) => {
          post(message);
          if (message?.type === 'try' && !killedDuringTry) {
            killedDuringTry = true;
            void worker.terminate();
          }
        };
        return () => killedDuringTry;
      },
    ],
  ];

  it.each(kills)(
    'a grammar worker that dies %s ends only its constrained rows; the next constrained request gets a fresh worker',
    async (_, kill) => {
      const logs: string[] = [];
      const engine = await open(logs);
      const driver = new Driver(engine);
      engine.add(request('free', prompt(5, 6), 60));
      engine.add(request('victim', prompt(6, 6), 200, { grammar: LONG_JSON }));
      await driver.until(() => (driver.results.get('victim')?.tokens.length ?? 0) >= 3);
      const killed = await kill(engine.grammarWorkerThread!);
      await driver.untilIdle();
      expect(killed()).toBe(true);
      expect(driver.results.get('victim')?.reason).toBe('abort');
      expect(logs.some((l) => /request victim: the grammar worker stopped/.test(l))).toBe(true);
      expect(driver.results.get('free')?.tokens).toEqual(await greedy(session, ort, prompt(5, 6), 60));
      expect(engine.stats().kvCacheUsage).toBe(0);

      engine.add(request('after', prompt(7, 6), 30, { grammar: CHOICES }));
      await driver.untilIdle();
      expect(driver.rejections).toEqual([]);
      expect(driver.results.get('after')?.reason).toBe('stop');
      expect(['yes', 'no', 'maybe']).toContain(text(driver.results.get('after')!.tokens.slice(0, -1)));
      await engine.release();
    },
    300_000,
  );
});

describe('greedy rows try their best unmasked candidates first', () => {
  it('give the same tokens as masked greedy, computing a mask only where the grammar takes none of the candidates', async () => {
    const engine = await open();
    const driver = new Driver(engine);
    const schema: GrammarSpec = {
      kind: 'json_schema',
      schema: '{"type":"object","properties":{"name":{"type":"string","maxLength":24},"tags":{"type":"array","items":{"type":"string"},"maxItems":3}},"required":["name","tags"]}',
    };
    const specs: [string, GrammarSpec][] = [
      ['json', schema],
      ['regex', { kind: 'regex', pattern: '[a-z ]{5,40}\\.' }],
      ['choice', CHOICES],
    ];
    const masks: NonNullable<StepOutput['grammarMasks']>[] = [];
    for (const [name, grammar] of specs) {
      for (let seed = 0; seed < 3; seed++) {
        engine.add(request(`${name}-${seed}`, prompt(20 + seed, 6), 48, { grammar }));
        // logprobs make the row take the mask first: the reference for the same greedy choice.
        engine.add(request(`${name}-${seed}-masked`, prompt(20 + seed, 6), 48, { grammar, sampling: { ...GREEDY_SAMPLING, logprobs: true } }));
      }
    }
    for (let i = 0; i < 5000 && engine.hasWork(); i++) {
      const output = await driver.step();
      if (output.grammarMasks) masks.push(output.grammarMasks);
    }
    expect(driver.rejections).toEqual([]);
    for (const [name] of specs) {
      for (let seed = 0; seed < 3; seed++) {
        const id = `${name}-${seed}`;
        expect(driver.results.get(id)?.tokens, id).toEqual(driver.results.get(`${id}-masked`)?.tokens);
        expect(driver.results.get(id)?.reason, id).toBe(driver.results.get(`${id}-masked`)?.reason);
      }
    }
    const tried = masks.reduce((n, m) => n + m.tried, 0);
    const refused = masks.reduce((n, m) => n + m.refused, 0);
    console.log(`greedy constrained rows: ${tried} tries of unmasked candidates, ${refused} took none (then masked)`);
    expect(tried).toBeGreaterThan(50);
    expect(refused).toBeGreaterThan(0);
    expect(engine.stats().kvCacheUsage).toBe(0);
    await engine.release();
  }, 300_000);
});

describe('thinking blocks', () => {
  const inside = (budget: number | null, endTokenIds = [END_THINK, 198]): ThinkingSpec => ({ endTokenIds, startsInside: true, startTokenIds: [THINK], budget });

  it('a spent budget closes the block with its closing ids; the tokens before are the free greedy ones', async () => {
    const engine = await open();
    const driver = new Driver(engine);
    engine.add(request('budget', prompt(8, 6), 20, { thinking: inside(6) }));
    engine.add(request('unlimited', prompt(8, 6), 20, { thinking: inside(null) }));
    await driver.untilIdle();
    const free = await greedy(session, ort, prompt(8, 6), 20);
    const budget = driver.results.get('budget')!.tokens;
    expect(budget.slice(0, 6)).toEqual(free.slice(0, 6));
    expect(budget.slice(6, 8)).toEqual([END_THINK, 198]);
    expect(budget).toHaveLength(20);
    expect(driver.results.get('unlimited')!.tokens).toEqual(free);
    await engine.release();
  }, 300_000);

  it('a grammar applies to the answer after the block: thinking is free, the answer valid', async () => {
    const engine = await open();
    const driver = new Driver(engine);
    const seeded = (seed: number): SamplingParams => ({ ...GREEDY_SAMPLING, temperature: 1, seed });
    // Inside from the prompt, closed at the budget.
    engine.add(request('in-prompt', prompt(9, 6), 40, { grammar: CHOICES, thinking: inside(4), sampling: seeded(1) }));
    // Opened by the output (a bias makes the model choose <think> over the grammar's first token).
    const opens: ThinkingSpec = { endTokenIds: [END_THINK], startsInside: false, startTokenIds: [THINK], budget: 3 };
    engine.add(request('opened', prompt(10, 6), 40, { grammar: CHOICES, thinking: opens, sampling: { ...seeded(2), logitBias: { [THINK]: 100 } } }));
    // Not opened (biased away from <think>, which competes with the grammar's first tokens): the grammar holds from the first token.
    engine.add(request('not-opened', prompt(11, 6), 40, { grammar: CHOICES, thinking: opens, sampling: { ...seeded(3), logitBias: { [THINK]: -100 } } }));
    await driver.untilIdle();
    expect(driver.rejections).toEqual([]);
    const answerOf = (id: string, thinkingLength: number) => {
      const r = driver.results.get(id)!;
      expect(r.reason, id).toBe('stop');
      return text(r.tokens.slice(thinkingLength, -1));
    };
    expect(driver.results.get('in-prompt')!.tokens[4]).toBe(END_THINK);
    expect(['yes', 'no', 'maybe']).toContain(answerOf('in-prompt', 4 + 2));
    const opened = driver.results.get('opened')!.tokens;
    expect(opened[0]).toBe(THINK);
    expect(opened[4]).toBe(END_THINK);
    expect(['yes', 'no', 'maybe']).toContain(answerOf('opened', 5));
    expect(['yes', 'no', 'maybe']).toContain(answerOf('not-opened', 0));
    expect(engine.stats().kvCacheUsage).toBe(0);
    await engine.release();
  }, 300_000);
});
