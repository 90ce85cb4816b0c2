// Decoupled models inside pipelines, against the real server with the tiny LLM: a TypeScript
// model streaming from the LLM over BLS (inferStream), and an ensemble whose middle step is the
// LLM (prompt builder → qwen3 → upper-casing per response), both streamed over gRPC
// ModelStreamInfer with a real @grpc/grpc-js client and over HTTP generate_stream. Outputs equal
// the engine's own greedy output; a client that cancels mid-stream frees the LLM's sequence.
import { copyFile, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LlmModel } from '../../src/serving/llm-backend.js';
import { addEnsemble } from '../support/ensemble-models.js';
import { cancelledCount, engineOutput, expectAbortedAndIdle, GREEDY, LLM } from '../support/generation.js';
import { configOf, loadModel, makeRepository, startTestServer, type TestServer } from '../support/server.js';
import { grpcClients, postSse, type GrpcClients, type GrpcReply } from '../support/streams.js';

const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'typescript-models');

async function addScriptModel(root: string, name: string, fixture: string, config: string): Promise<void> {
  await mkdir(join(root, name, '1'), { recursive: true });
  await writeFile(join(root, name, 'config.pbtxt'), `name: "${name}"\n${config}`);
  await copyFile(join(FIXTURES, fixture), join(root, name, '1', fixture.endsWith('.js') ? 'model.js' : 'model.ts'));
}

const LLM_STREAM = `backend: "typescript"
max_batch_size: 0
model_transaction_policy { decoupled: true }
input [ { name: "PROMPT" data_type: TYPE_STRING dims: [ 1 ] }, { name: "MAX_TOKENS" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "TEXT" data_type: TYPE_STRING dims: [ 1 ] } ]
parameters { key: "target" value { string_value: "${LLM}" } }
`;
/** The prompt the ensemble's first step builds (its config's template). */
const promptFor = (question: string): string => `Question: ${question}\nAnswer:`;
const PROMPT_BUILDER = `backend: "typescript"
max_batch_size: 0
input [ { name: "TEXT" data_type: TYPE_STRING dims: [ 1 ] } ]
output [ { name: "PROMPT" data_type: TYPE_STRING dims: [ 1 ] } ]
parameters { key: "template" value { string_value: ${JSON.stringify(promptFor('{question}'))} } }
`;
const UPPER = `backend: "javascript"
max_batch_size: 0
input [ { name: "TEXT" data_type: TYPE_STRING dims: [ -1 ] } ]
output [ { name: "UPPER" data_type: TYPE_STRING dims: [ -1 ] } ]
`;
const step = (model: string, input: [string, string], output: [string, string]) =>
  `{ model_name: "${model}" model_version: -1 input_map { key: "${input[0]}" value: "${input[1]}" } output_map { key: "${output[0]}" value: "${output[1]}" } }`;
const pipeline = (name: string, outputs: string, steps: readonly string[]) => `name: "${name}"
platform: "ensemble"
max_batch_size: 0
input [ { name: "QUESTION" data_type: TYPE_STRING dims: [ 1 ] } ]
output [ ${outputs} ]
ensemble_scheduling { step [ ${steps.join(', ')} ] }
`;
const ANSWER = '{ name: "ANSWER" data_type: TYPE_STRING dims: [ -1 ] }';
const LLM_STEPS = [
  step('prompt-builder', ['TEXT', 'QUESTION'], ['PROMPT', 'prompt']),
  step(LLM, ['text_input', 'prompt'], ['text_output', 'piece']),
  step('upper', ['TEXT', 'piece'], ['UPPER', 'ANSWER']),
];

let server: TestServer;
let model: LlmModel;
let clients: GrpcClients;

beforeAll(async () => {
  const root = await makeRepository([{ name: LLM, from: 'qwen3-tiny', config: configOf('qwen3-tiny', LLM) }]);
  await addScriptModel(root, 'llm-stream', 'llm-stream.ts', LLM_STREAM);
  await addScriptModel(root, 'prompt-builder', 'prompt-builder.ts', PROMPT_BUILDER);
  await addScriptModel(root, 'upper', 'upper.js', UPPER);
  await addEnsemble(root, 'llm-pipeline', pipeline('llm-pipeline', ANSWER, LLM_STEPS));
  // Refused shapes: an output computed once, beside the streamed ones; two decoupled steps.
  await addEnsemble(
    root,
    'mixed-outputs',
    pipeline('mixed-outputs', `${ANSWER}, { name: "PROMPT_OUT" data_type: TYPE_STRING dims: [ 1 ] }`, [
      ...LLM_STEPS.slice(0, 2),
      step('upper', ['TEXT', 'piece'], ['UPPER', 'ANSWER']),
      step('upper', ['TEXT', 'prompt'], ['UPPER', 'PROMPT_OUT']),
    ]),
  );
  server = await startTestServer(root, ['--model-control-mode', 'explicit', '--load-model', LLM, '--load-model', 'llm-stream', '--load-model', 'llm-pipeline']);
  model = server.manager.resolve(LLM) as LlmModel;
  clients = grpcClients(server.grpcAddress);
}, 180_000);
afterAll(async () => {
  clients?.close();
  await server?.stop();
});

const QUESTION = 'Why is the sky blue?';
const stringParam = (value: string) => ({ string_param: value });
/** Greedy sampling as request parameters, strings as gRPC clients send them. */
const greedyParameters = (maxTokens: number) => ({ temperature: stringParam('0'), ignore_eos: stringParam('true'), max_tokens: stringParam(String(maxTokens)) });
const bytesInput = (name: string, value: string) => ({ name, datatype: 'BYTES', shape: [1], contents: { bytes_contents: [Buffer.from(value)] } });
/** BYTES raw output: 4-byte little-endian length, then the bytes. */
const rawString = (raw: Uint8Array): string => Buffer.from(raw).subarray(4).toString('utf8');
const finalFlag = (reply: GrpcReply): boolean => ((reply['parameters'] as GrpcReply)['triton_final_response'] as { bool_param: boolean }).bool_param;

/** One ModelStreamInfer call with one request; resolves with its responses once the final one arrives (or the first error). */
function streamOne(request: object, onResponse?: (response: GrpcReply, call: grpc.ClientDuplexStream<object, GrpcReply>) => void): Promise<{ responses: GrpcReply[]; errors: string[] }> {
  const call = (clients.inference['ModelStreamInfer'] as () => grpc.ClientDuplexStream<object, GrpcReply>)();
  const responses: GrpcReply[] = [];
  const errors: string[] = [];
  return new Promise((resolve) => {
    call.on('data', (reply: GrpcReply) => {
      if (reply['error_message']) {
        errors.push(reply['error_message'] as string);
        call.end();
        return;
      }
      const response = reply['infer_response'] as GrpcReply;
      responses.push(response);
      onResponse?.(response, call);
      if (finalFlag(response)) call.end();
    });
    call.on('end', () => resolve({ responses, errors }));
    call.on('error', () => resolve({ responses, errors }));
    call.write(request);
  });
}

const textOf = (responses: readonly GrpcReply[]): string => responses.map((r) => (r['raw_output_contents'] as Uint8Array[]).map(rawString).join('')).join('');

describe('BLS streaming from an LLM (a TypeScript model’s request.inferStream)', () => {
  it('streams the LLM’s responses as Triton’s vLLM backend tensors, equal to the engine’s greedy output', async () => {
    const expected = await engineOutput(model, { prompt: { kind: 'text', text: QUESTION }, sampling: { ...GREEDY, max_tokens: 8 } });
    const { responses, errors } = await streamOne({
      model_name: 'llm-stream',
      id: 'bls',
      inputs: [bytesInput('PROMPT', QUESTION), { name: 'MAX_TOKENS', datatype: 'INT32', shape: [1], contents: { int_contents: [8] } }],
      // The sender's close() is a flags-only final: sent as an empty response when asked for.
      parameters: { ...greedyParameters(8), triton_enable_empty_final_response: { bool_param: true } },
    });
    expect(errors).toEqual([]);
    // One response per engine step, then the empty final.
    expect(responses.length).toBeGreaterThan(2);
    expect(responses.every((r) => r['id'] === 'bls')).toBe(true);
    expect(responses.at(-1)!['outputs']).toEqual([]);
    expect(textOf(responses)).toBe(expected.text);
  });

  it('a client that cancels mid-stream cancels the BLS call: the LLM aborts and frees its blocks', async () => {
    const before = cancelledCount(model);
    const { responses } = await streamOne(
      {
        model_name: 'llm-stream',
        inputs: [bytesInput('PROMPT', QUESTION), { name: 'MAX_TOKENS', datatype: 'INT32', shape: [1], contents: { int_contents: [1000] } }],
        parameters: { ignore_eos: stringParam('true') },
      },
      (_response, call) => call.cancel(),
    );
    expect(responses.length).toBeGreaterThanOrEqual(1);
    await expectAbortedAndIdle(model, before);
  });
});

describe('an ensemble with a decoupled LLM step', () => {
  it('streams each LLM response through the per-response postprocess over ModelStreamInfer, equal to calling the steps one by one', async () => {
    const expected = await engineOutput(model, { prompt: { kind: 'text', text: promptFor(QUESTION) }, sampling: { ...GREEDY, max_tokens: 8 } });
    const { responses, errors } = await streamOne({
      model_name: 'llm-pipeline',
      id: 'pipe',
      inputs: [bytesInput('QUESTION', QUESTION)],
      parameters: { ...greedyParameters(8), stream: { bool_param: true } },
    });
    expect(errors).toEqual([]);
    expect(responses.length).toBeGreaterThan(1);
    expect(responses.map(finalFlag)).toEqual([...responses.slice(1).map(() => false), true]);
    expect(responses.every((r) => r['model_name'] === 'llm-pipeline' && r['id'] === 'pipe')).toBe(true);
    expect(responses.every((r) => (r['outputs'] as GrpcReply[]).map((o) => o['name']).join() === 'ANSWER')).toBe(true);
    expect(textOf(responses)).toBe(expected.text.toUpperCase());
  });

  it('streams over HTTP generate_stream too, one SSE event per LLM response', async () => {
    const expected = await engineOutput(model, { prompt: { kind: 'text', text: promptFor(QUESTION) }, sampling: { ...GREEDY, max_tokens: 6 } });
    const sse = await postSse(`${server.http}/v2/models/llm-pipeline/generate_stream`, { id: 'h', QUESTION, parameters: { stream: true, temperature: 0, ignore_eos: true, max_tokens: 6 } });
    expect(sse.status).toBe(200);
    const events = (await sse.ended).map((frame) => JSON.parse(frame) as Record<string, unknown>);
    expect(events.length).toBeGreaterThan(1);
    expect(events.every((e) => e['model_name'] === 'llm-pipeline' && e['model_version'] === '1' && e['id'] === 'h')).toBe(true);
    expect(events.map((e) => e['ANSWER']).join('')).toBe(expected.text.toUpperCase());
  });

  it('the one-response infer refuses the streaming ensemble, saying it is decoupled', async () => {
    const response = await fetch(`${server.http}/v2/models/llm-pipeline/infer`, {
      method: 'POST',
      body: JSON.stringify({ inputs: [{ name: 'QUESTION', datatype: 'BYTES', shape: [1], data: [QUESTION] }] }),
    });
    expect(response.status).toBe(501);
    expect(((await response.json()) as { error: string }).error).toMatch(/decoupled/);
  });

  it('a client that cancels mid-stream frees the LLM’s sequence', async () => {
    const before = cancelledCount(model);
    const { responses } = await streamOne(
      { model_name: 'llm-pipeline', inputs: [bytesInput('QUESTION', QUESTION)], parameters: { stream: { bool_param: true }, ignore_eos: stringParam('true'), max_tokens: stringParam('1000') } },
      (_response, call) => call.cancel(),
    );
    expect(responses.length).toBeGreaterThanOrEqual(1);
    await expectAbortedAndIdle(model, before);
  });

  it('refuses at load an ensemble output that does not come from the decoupled step’s responses, naming it', async () => {
    const { status, error } = await loadModel(server, 'mixed-outputs');
    expect(status).toBe(400);
    expect(error).toMatch(/output 'PROMPT_OUT' does not come from the responses of ensemble_scheduling\.step\[2\] \('qwen3'\), which is decoupled/);
  });
});
