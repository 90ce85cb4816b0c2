// Worker supervision against the real server, with the test-only fault injection making workers
// die on purpose: an LLM engine that throws (or exits) with several streams in flight — or whose
// draft model (speculative_config method draft_model) throws in one of its passes — fails
// exactly those, in each protocol's error shape; readiness turns false at once everywhere and
// back once the fresh engine is up, which then answers with the correct greedy output. A BERT
// instance dying mid-batch fails only that batch and restarts; a crash loop ends UNAVAILABLE
// with its reason in the repository index.
import * as grpc from '@grpc/grpc-js';
import OpenAI, { APIError } from 'openai';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { PROCESS_METRICS } from '../../src/metrics/metric-definitions.js';
import { FAULT_INJECTION_ENV } from '../../src/threads/fault-injection.js';
import { configOf, makeRepository, startTestServer, type TestModel, type TestServer } from '../support/server.js';
import { parseExposition } from '../unit/metrics/exposition.js';
import { grpcClients, type GrpcClients } from '../support/streams.js';

type Reply = Record<string, unknown>;

/** The crash happens at this engine step, long after every request below has arrived. */
const CRASH_STEP = 200;
const faulty = (name: string, from: string, spec: string, moreParameters = ''): TestModel => ({
  name,
  from,
  config: configOf(from, name, (t) => `${t}\nparameters: { key: "fault_injection" value: { string_value: "${spec}" } }\n${moreParameters}`),
});
/**
 * The draft's passes come up to five a step while it proposes; the engine proposes only as much
 * as pays for its positions, which on this model holds at two streams (at four or six, it soon
 * stops), so the draft's test runs two streams at a time and this pass falls well into them.
 */
const DRAFT_CRASH_PASS = 100;
/** The target as its own draft: every proposal holds. */
const DRAFT_ITSELF = `parameters: { key: "speculative_config" value: { string_value: ${JSON.stringify(JSON.stringify({ method: 'draft_model', model: '.', num_speculative_tokens: 4 }))} } }\n`;

let server: TestServer;
let openai: OpenAI;
let clients: GrpcClients;

beforeAll(async () => {
  process.env[FAULT_INJECTION_ENV] = '1';
  const repository = await makeRepository([
    { name: 'llm', from: 'qwen3-tiny', config: configOf('qwen3-tiny', 'llm') },
    faulty('llm-throw', 'qwen3-tiny', `throw_at_step:${CRASH_STEP}`),
    faulty('llm-exit', 'qwen3-tiny', `exit_at_step:${CRASH_STEP}`),
    faulty('llm-draft-throw', 'qwen3-tiny', `throw_at_draft_pass:${DRAFT_CRASH_PASS}`, DRAFT_ITSELF),
    faulty('bert', 'bert-tiny', 'exit_at_execution:2'),
  ]);
  server = await startTestServer(repository);
  openai = new OpenAI({ baseURL: `${server.http}/v1`, apiKey: 'unused', maxRetries: 0 });
  clients = grpcClients(server.grpcAddress);
}, 120_000);
afterAll(async () => {
  clients?.close();
  await server?.stop();
  delete process.env[FAULT_INJECTION_ENV];
});

/** Polls `check` until true; generous, since restarts take a backoff plus a model load. */
async function waitFor(check: () => Promise<boolean>, timeoutMs = 45_000): Promise<void> {
  await vi.waitFor(async () => expect(await check()).toBe(true), { timeout: timeoutMs, interval: 50 });
}

const PROMPT = 'The quick brown fox';
const LONG = { max_tokens: 1000, ignore_eos: true, temperature: 0 };

/** One outcome per protocol, as its client sees it: the HTTP status / gRPC code and the message. */
interface Outcome {
  readonly protocol: string;
  readonly status: number | string;
  readonly message: string;
}

async function openaiNonStreaming(model: string): Promise<Outcome> {
  try {
    await openai.completions.create({ model, prompt: PROMPT, ...LONG } as OpenAI.CompletionCreateParamsNonStreaming);
    return { protocol: 'openai', status: 200, message: '' };
  } catch (error) {
    if (!(error instanceof APIError)) throw error;
    expect(error.error).toMatchObject({ type: 'server_error', code: 'service_unavailable', param: null });
    return { protocol: 'openai', status: error.status ?? 0, message: error.message };
  }
}

/** Raw SSE, to see the framing: chunks, then `data: {"error":…}` and `data: [DONE]`. */
async function openaiStreaming(model: string): Promise<Outcome & { chunks: number }> {
  const response = await fetch(`${server.http}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, prompt: PROMPT, stream: true, ...LONG }),
  });
  const text = await response.text();
  if (response.status !== 200) return { protocol: 'sse', status: response.status, message: JSON.parse(text).error.message, chunks: 0 };
  const events = text
    .split('\n\n')
    .filter((e) => e.startsWith('data: '))
    .map((e) => e.slice(6));
  expect(events.at(-1)).toBe('[DONE]');
  const last = JSON.parse(events.at(-2)!);
  expect(last.error).toMatchObject({ type: 'server_error', code: 'service_unavailable' });
  return { protocol: 'sse', status: 'error event', message: last.error.message, chunks: events.length - 2 };
}

async function kserveGenerate(model: string): Promise<Outcome> {
  const response = await fetch(`${server.http}/v2/models/${model}/generate`, {
    method: 'POST',
    body: JSON.stringify({ text_input: PROMPT, max_tokens: 1000, parameters: { ignore_eos: true, temperature: 0 } }),
  });
  const body = await response.json();
  return { protocol: 'kserve', status: response.status, message: body.error };
}

function grpcGenerate(model: string): Promise<Outcome> {
  return new Promise((resolve) => {
    const call = clients.generation['Generate']!({ model, text: PROMPT, sampling: LONG }) as grpc.ClientReadableStream<Reply>;
    call.on('data', () => {});
    call.on('error', (error: grpc.ServiceError) => resolve({ protocol: 'grpc', status: grpc.status[error.code], message: error.details }));
    call.on('end', () => resolve({ protocol: 'grpc', status: 'OK', message: '' }));
  });
}

const grpcModelReady = (name: string): Promise<boolean> =>
  new Promise((resolve, reject) => {
    clients.inference['ModelReady']!({ name, version: '' }, (error: grpc.ServiceError | null, reply: { ready: boolean }) => (error ? reject(error) : resolve(reply.ready)));
  });
const httpStatus = async (path: string, init?: RequestInit) => (await fetch(`${server.http}${path}`, init)).status;
const indexRow = async (name: string) =>
  ((await (await fetch(`${server.http}/v2/repository/index`, { method: 'POST', body: '{}' })).json()) as { name: string; state: string; reason: string }[]).find((r) => r.name === name)!;
const cardState = async (name: string) => (await openai.models.list()).data.find((m) => m.id === name) as unknown as { state: string };
const scrape = async () => parseExposition(await (await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`)).text());

async function greedyText(model: string): Promise<string> {
  const completion = await openai.completions.create({ model, prompt: PROMPT, max_tokens: 8, temperature: 0, ignore_eos: true } as OpenAI.CompletionCreateParamsNonStreaming);
  return completion.choices[0]!.text;
}

describe.each([
  ['throws', 'llm-throw'],
  ['exits', 'llm-exit'],
])('an LLM engine that %s mid-step', (_, model) => {
  it('fails each in-flight request in its protocol shape, is not ready at once, restarts fresh and answers correctly', async () => {
    const reference = await greedyText('llm');
    const outcomes = await Promise.all([openaiNonStreaming(model), openaiNonStreaming(model), openaiStreaming(model), openaiStreaming(model), kserveGenerate(model), grpcGenerate(model)]);
    // Readiness is false in the same moment the errors went out (the restart waits 0.5 s first).
    const [modelReady, serverReady, grpcReady, card, row] = await Promise.all([
      httpStatus(`/v2/models/${model}/ready`),
      httpStatus('/v2/health/ready'),
      grpcModelReady(model),
      cardState(model),
      indexRow(model),
    ]);
    expect({ modelReady, serverReady, grpcReady, card: card.state, row: row.state }).toEqual({ modelReady: 400, serverReady: 400, grpcReady: false, card: 'UNAVAILABLE', row: 'UNAVAILABLE' });
    expect(row.reason).toMatch(/^restarting after a crash: /);
    expect(await httpStatus('/v2/models/llm/ready')).toBe(200);

    // Every request was in flight when the engine died, so each got the crash error.
    const expected = { openai: 503, sse: 'error event', kserve: 503, grpc: 'UNAVAILABLE' };
    for (const outcome of outcomes) {
      expect(outcome.status, outcome.protocol).toBe(expected[outcome.protocol as keyof typeof expected]);
      expect(outcome.message, outcome.protocol).toMatch(new RegExp(`the engine of model '${model}' version 1 crashed \\(.+\\); the request was not completed`));
    }
    const streamed = outcomes.filter((o): o is Outcome & { chunks: number } => o.protocol === 'sse');
    expect(streamed.every((o) => o.chunks > 0)).toBe(true);

    await waitFor(async () => (await httpStatus(`/v2/models/${model}/ready`)) === 200);
    expect(await httpStatus('/v2/health/ready')).toBe(200);
    expect(await grpcModelReady(model)).toBe(true);
    expect((await cardState(model)).state).toBe('READY');
    expect(await indexRow(model)).toMatchObject({ state: 'READY', reason: '' });
    // A fresh engine (new KV cache) computes the same greedy continuation as the healthy copy.
    expect(await greedyText(model)).toBe(reference);
    const metrics = await scrape();
    expect(metrics.value(PROCESS_METRICS.workerRestarts.name, { model, version: '1' })).toBe(1);
    expect(metrics.value(PROCESS_METRICS.workerAlive.name, { model, version: '1', worker: '0' })).toBe(1);
    expect(server.logs.some((l) => l.includes('TEST-ONLY FAULT INJECTION ACTIVE'))).toBe(true);
  }, 120_000);
});

describe('an LLM engine whose draft model throws in one of its passes', () => {
  it('fails the requests in flight in each protocol shape, restarts fresh and answers correctly', async () => {
    const model = 'llm-draft-throw';
    const reference = await greedyText('llm');
    const expected = { openai: 503, sse: 'error event', kserve: 503, grpc: 'UNAVAILABLE' };
    // Two rounds of two streams (see DRAFT_CRASH_PASS): each fresh engine's draft fails again at the same pass.
    for (const [round, requests] of [
      [1, [openaiStreaming, grpcGenerate]],
      [2, [openaiNonStreaming, kserveGenerate]],
    ] as const) {
      await waitFor(async () => (await httpStatus(`/v2/models/${model}/ready`)) === 200);
      const outcomes = await Promise.all(requests.map((send) => send(model)));
      for (const outcome of outcomes) {
        expect(outcome.status, `round ${round}: ${outcome.protocol}`).toBe(expected[outcome.protocol as keyof typeof expected]);
        expect(outcome.message, outcome.protocol).toMatch(
          new RegExp(`the engine of model '${model}' version 1 crashed \\(engine failed: fault injection: throw at draft_pass ${DRAFT_CRASH_PASS}\\); the request was not completed`),
        );
      }
      // The stream had its first tokens before the draft failed: the crash came mid-stream.
      for (const outcome of outcomes) if ('chunks' in outcome) expect(outcome.chunks).toBeGreaterThan(0);
    }
    await waitFor(async () => (await httpStatus(`/v2/models/${model}/ready`)) === 200);
    // Eight tokens take the fresh engine's draft far fewer passes than the fault's.
    expect(await greedyText(model)).toBe(reference);
    const metrics = await scrape();
    expect(metrics.value(PROCESS_METRICS.workerRestarts.name, { model, version: '1' })).toBe(2);
    expect(metrics.value(PROCESS_METRICS.workerAlive.name, { model, version: '1', worker: '0' })).toBe(1);
  }, 120_000);
});

const bertBody = (ids: number[]) => ({
  inputs: ['input_ids', 'attention_mask', 'token_type_ids'].map((name) => ({
    name,
    datatype: 'INT64',
    shape: [1, ids.length],
    data: ids.map((id) => (name === 'input_ids' ? id : name === 'attention_mask' ? 1 : 0)),
  })),
});
const bertInfer = (ids: number[]) => fetch(`${server.http}/v2/models/bert/infer`, { method: 'POST', body: JSON.stringify(bertBody(ids)) });

describe('a BERT instance that dies mid-batch', () => {
  it('fails only that batch (KServe 503 {error}), restarts, and serves again', async () => {
    const before = await bertInfer([101, 7592, 102]); // execution 1
    expect(before.status).toBe(200);
    const healthy = (await before.json()).outputs;
    const crashed = await bertInfer([101, 2088, 102]); // execution 2: the instance exits
    expect(crashed.status).toBe(503);
    expect((await crashed.json()).error).toMatch(/^model instance bert:1\/0 crashed \(worker exited with code 70\) while running this request's batch/);
    expect(await httpStatus('/v2/models/bert/ready')).toBe(400);
    const refused = await bertInfer([101, 102]);
    expect(refused.status).toBe(503);
    expect((await refused.json()).error).toMatch(/not at ready state|no available versions/);
    await waitFor(async () => (await httpStatus('/v2/models/bert/ready')) === 200);
    const after = await bertInfer([101, 7592, 102]);
    expect(after.status).toBe(200);
    expect((await after.json()).outputs).toEqual(healthy);
    const metrics = await scrape();
    expect(metrics.value(PROCESS_METRICS.workerRestarts.name, { model: 'bert', version: '1' })).toBe(1);
    expect(metrics.value(PROCESS_METRICS.workerAlive.name, { model: 'bert', version: '1', worker: '0' })).toBe(1);
  }, 60_000);
});

describe('a crash loop', () => {
  it('ends UNAVAILABLE with the reason in the index, not ready, and refuses requests at once', async () => {
    const repository = await makeRepository([faulty('bert', 'bert-tiny', 'exit_at_execution:1')]);
    const looping = await startTestServer(repository);
    try {
      const infer = () => fetch(`${looping.http}/v2/models/bert/infer`, { method: 'POST', body: JSON.stringify(bertBody([101, 102])) });
      const ready = async () => (await fetch(`${looping.http}/v2/models/bert/ready`)).status === 200;
      const row = async () => ((await (await fetch(`${looping.http}/v2/repository/index`, { method: 'POST' })).json()) as { state: string; reason: string }[])[0]!;
      // Every fresh instance dies at its first execution: 5 crashes (0.5 + 1 + 2 + 4 s of backoff) make a loop.
      for (let crash = 1; crash <= 5; crash += 1) {
        await waitFor(ready);
        const response = await infer();
        expect(response.status, `crash ${crash}`).toBe(503);
        expect((await response.json()).error).toMatch(/crashed \(worker exited with code 70\)/);
      }
      const final = await row();
      expect(final.state).toBe('UNAVAILABLE');
      expect(final.reason).toBe('crash loop: 5 crashes within 60 s (last: worker exited with code 70); load the model again to retry');
      expect(await ready()).toBe(false);
      expect((await fetch(`${looping.http}/v2/health/ready`)).status).toBe(400);
      const refused = await infer();
      expect(refused.status).toBe(503);
      expect((await refused.json()).error).toMatch(/crash loop: 5 crashes/);
      expect(looping.logs.some((l) => l.includes('crash loop: 5 crashes'))).toBe(true);
    } finally {
      await looping.stop();
    }
  }, 120_000);
});
