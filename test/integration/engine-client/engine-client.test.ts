// The engine in its worker thread, driven through the main-thread facade.
import * as ort from 'onnxruntime-node';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type GenerateRequest, GREEDY_SAMPLING } from '../../../src/contracts/generate.js';
import { EngineClient } from '../../../src/engine-client/engine-client.js';
import { DEFAULT_REPOSITORY } from '../../../models/default-repository.js';
import { greedy } from '../../support/decoder.js';

const MODEL = join(DEFAULT_REPOSITORY, 'qwen3-tiny', '1', 'onnx', 'model.onnx');
const request = (id: string, prompt: number[], maxTokens: number): GenerateRequest => ({
  id,
  promptTokenIds: prompt,
  priority: 0,
  cacheSalt: null,
  sampling: GREEDY_SAMPLING,
  stop: { maxTokens, minTokens: 0, eosTokenIds: [], ignoreEos: true, stopTokenIds: [] },
});
let engine: EngineClient;

beforeAll(async () => {
  engine = await EngineClient.start(
    {
      modelPath: MODEL,
      device: 'cpu',
      intraOpNumThreads: 1,
      maxNumSeqs: 16,
      maxNumBatchedTokens: 64,
      maxModelLen: 1024,
      blockSize: 16,
      kvCacheBytes: 8 << 20,
      enablePrefixCaching: true,
      sampleableVocabSize: 151_669,
    },
    () => {},
  );
});
afterAll(async () => engine?.close());

async function collect(stream: AsyncIterable<{ update: { newTokenIds: readonly number[]; finishReason: string | null } }>) {
  const tokens: number[] = [];
  let reason: string | null = null;
  for await (const { update } of stream) {
    tokens.push(...update.newTokenIds);
    reason = update.finishReason;
  }
  return { tokens, reason };
}

describe('EngineClient', () => {
  it('streams concurrent requests from the worker with the tokens each gets alone', async () => {
    const session = await ort.InferenceSession.create(MODEL, { intraOpNumThreads: 1 });
    const prompts = [
      [1, 2, 3, 4, 5],
      [100, 200, 300],
      [5000, 6000, 7000, 8000, 9000, 10000, 11000],
    ];
    const results = await Promise.all(prompts.map((p, i) => collect(engine.submit(request(`r${i}`, p, 10 + i)))));
    for (const [i, p] of prompts.entries()) {
      expect(results[i]!.tokens).toEqual(await greedy(session, ort, p, 10 + i));
      expect(results[i]!.reason).toBe('length');
    }
  });

  it('a consumer that stops early aborts the request and its blocks return', async () => {
    const stream = engine.submit(request('early', [42, 43, 44], 400));
    let seen = 0;
    for await (const { update } of stream) {
      seen += update.newTokenIds.length;
      if (seen >= 3) break;
    }
    // The abort reaches the engine at its next step boundary; wait for the step that reports it.
    await vi.waitFor(
      () => {
        expect(engine.numActive).toBe(0);
        expect(engine.stats!.kvCacheUsage).toBe(0); // cached blocks of earlier requests stay evictable
      },
      { timeout: 15_000, interval: 10 },
    );
  });

  it('surfaces a rejection as an error on the stream', async () => {
    // Past max_model_len: the input processor refuses these for users; the engine still never admits one.
    await expect(
      collect(
        engine.submit(
          request(
            'long',
            Array.from({ length: 1100 }, (_, i) => i + 1),
            5,
          ),
        ),
      ),
    ).rejects.toMatchObject({ code: 'INTERNAL' });
  });

  it('keeps the main thread responsive while generating', async () => {
    const lags: number[] = [];
    let last = performance.now();
    const timer = setInterval(() => {
      const now = performance.now();
      lags.push(now - last - 2);
      last = now;
    }, 2);
    await Promise.all(Array.from({ length: 8 }, (_, i) => collect(engine.submit(request(`lag${i}`, [i + 1, i + 2], 40)))));
    clearInterval(timer);
    // Median, not max: a loaded machine may delay a single tick; a blocked thread delays them all.
    lags.sort((a, b) => a - b);
    expect(lags[Math.floor(lags.length / 2)]!).toBeLessThan(20);
  });
});
