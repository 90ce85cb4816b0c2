// Shared by the streaming-transport and OpenAI-compatibility tests: a server with the tiny LLM
// (with the official OpenAI SDK on its /v1), the engine's own output for a request (the reference
// every transport must reproduce), and the check that an aborted request left the engine idle
// with its blocks returned.
import OpenAI from 'openai';
import { afterAll, beforeAll, expect, vi } from 'vitest';
import type { GenerateInput, LlmModel } from '../../src/serving/llm-backend.js';
import { configOf, makeRepository, startTestServer, type TestServer } from './server.js';

export const LLM = 'qwen3';

export async function startLlmServer(): Promise<{ server: TestServer; model: LlmModel }> {
  const repository = await makeRepository([{ name: LLM, from: 'qwen3-tiny', config: configOf('qwen3-tiny', LLM) }]);
  const server = await startTestServer(repository);
  return { server, model: server.manager.resolve(LLM) as LlmModel };
}

export interface LlmServerWithClient {
  readonly server: TestServer;
  /** The official OpenAI SDK on the server's /v1, retries off (a failure shows as it happened). */
  readonly client: OpenAI;
}

/**
 * For a test file: the tiny-LLM server and its OpenAI client, started before the file's tests
 * and stopped after them. Read the fields inside the tests (they throw before the start).
 */
export function useLlmServerWithClient(): LlmServerWithClient {
  let started: LlmServerWithClient | undefined;
  beforeAll(async () => {
    const { server } = await startLlmServer();
    started = { server, client: new OpenAI({ baseURL: `${server.http}/v1`, apiKey: 'unused', maxRetries: 0 }) };
  }, 120_000);
  afterAll(async () => started?.server.stop());
  const live = (): LlmServerWithClient => {
    if (!started) throw new Error('the LLM server starts in beforeAll: read it inside a test');
    return started;
  };
  return {
    get server() {
      return live().server;
    },
    get client() {
      return live().client;
    },
  };
}

export interface EngineOutput {
  readonly text: string;
  readonly tokenIds: number[];
  readonly finishReason: string | null;
  readonly promptTokens: number;
}

/** What LlmModel.generate itself produces for `input`. */
export async function engineOutput(model: LlmModel, input: GenerateInput): Promise<EngineOutput> {
  let text = '';
  const tokenIds: number[] = [];
  let finishReason: string | null = null;
  let promptTokens = 0;
  for await (const event of model.generate(await model.prepare(input))) {
    text += event.text;
    tokenIds.push(...event.tokenIds);
    finishReason = event.finishReason;
    promptTokens = event.usage.promptTokens;
  }
  return { text, tokenIds, finishReason, promptTokens };
}

/** Cancelled requests so far (aborts are recorded as CANCELED failures). */
export const cancelledCount = (model: LlmModel): number => model.failures().CANCELED;

/** The engine runs nothing and every KV block is free again, with `cancelled` more aborts than before. */
export async function expectAbortedAndIdle(model: LlmModel, cancelledBefore: number, cancelled = 1): Promise<void> {
  await vi.waitFor(
    () => {
      expect(model.engine.numActive).toBe(0);
      expect(model.engine.stats!.numRunning + model.engine.stats!.numWaiting).toBe(0);
      expect(model.engine.stats!.kvCacheUsage).toBe(0);
      expect(cancelledCount(model)).toBe(cancelledBefore + cancelled);
    },
    { timeout: 15_000, interval: 20 },
  );
}

/** Long enough that only an abort ends it within a test's patience. */
export const LONG = { max_tokens: 1000, ignore_eos: true } as const;
export const GREEDY = { max_tokens: 12, ignore_eos: true, temperature: 0 } as const;
