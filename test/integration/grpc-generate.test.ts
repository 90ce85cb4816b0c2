// Streaming generation over gRPC against the real server with the tiny LLM, through clients
// generated at run time from protos/: conveyor.v1.GenerationService/Generate, and KServe
// ModelStreamInfer on the LLM in Triton's decoupled style (text_input / stream / max_tokens in,
// text_output out, triton_final_response). Cancelled calls must free the engine.
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LlmModel } from '../../src/serving/llm-backend.js';
import { cancelledCount, engineOutput, expectAbortedAndIdle, GREEDY, LLM, LONG, startLlmServer } from '../support/generation.js';
import type { TestServer } from '../support/server.js';
import { grpcClients, type GrpcClients } from '../support/streams.js';

type Reply = Record<string, unknown>;

let server: TestServer;
let model: LlmModel;
let clients: GrpcClients;

beforeAll(async () => {
  ({ server, model } = await startLlmServer());
  clients = grpcClients(server.grpcAddress);
}, 120_000);
afterAll(async () => {
  clients?.close();
  await server?.stop();
});

const chat = (content: string) => ({ messages: [{ role: 'user', content }] });

/** Every message of a Generate call, or its error status. */
function generate(request: object): Promise<{ messages: Reply[]; error?: grpc.ServiceError }> {
  return new Promise((resolve) => {
    const messages: Reply[] = [];
    const call = clients.generation['Generate']!(request) as grpc.ClientReadableStream<Reply>;
    call.on('data', (m: Reply) => messages.push(m));
    call.on('error', (error: grpc.ServiceError) => resolve({ messages, error }));
    call.on('end', () => resolve({ messages }));
  });
}

const deltas = (messages: Reply[]) => messages.filter((m) => m['event'] === 'delta').map((m) => m['delta'] as { text: string; token_ids: number[] });

describe('conveyor.v1.GenerationService/Generate', () => {
  it('streams deltas then a final with finish reason and usage, equal to the engine’s greedy output', async () => {
    const { messages, error } = await generate({ model: LLM, request_id: 'r1', chat: chat('Hello!'), sampling: GREEDY });
    expect(error).toBeUndefined();
    const expected = await engineOutput(model, { prompt: { kind: 'chat', ...chat('Hello!') }, sampling: GREEDY });
    expect(
      deltas(messages)
        .map((d) => d.text)
        .join(''),
    ).toBe(expected.text);
    expect(deltas(messages).flatMap((d) => d.token_ids)).toEqual(expected.tokenIds);
    expect(messages.every((m) => m['request_id'] === 'r1')).toBe(true);
    const last = messages.at(-1)!;
    expect(last['event']).toBe('final');
    expect(last['final']).toMatchObject({
      finish_reason: 'FINISH_REASON_LENGTH',
      usage: { prompt_tokens: expected.promptTokens, completion_tokens: 12, total_tokens: expected.promptTokens + 12 },
    });
  });

  it('takes text and token-id prompts', async () => {
    const text = await generate({ model: LLM, text: 'Once upon a time', sampling: GREEDY });
    const expected = await engineOutput(model, { prompt: { kind: 'text', text: 'Once upon a time' }, sampling: GREEDY });
    expect(
      deltas(text.messages)
        .map((d) => d.text)
        .join(''),
    ).toBe(expected.text);
    const tokens = await generate({ model: LLM, tokens: { ids: [9707, 11, 1879] }, sampling: { ...GREEDY, max_tokens: 3 } });
    expect(deltas(tokens.messages).flatMap((d) => d.token_ids)).toHaveLength(3);
  });

  it('refuses bad requests with a status and the error code as trailing metadata', async () => {
    const bad = await generate({ model: LLM, chat: chat('x'), sampling: { temperature: -1 } });
    expect(bad.messages).toEqual([]);
    expect(bad.error).toMatchObject({ code: grpc.status.INVALID_ARGUMENT, details: expect.stringMatching(/temperature/) });
    expect(bad.error!.metadata.get('conveyor-error-param')).toEqual(['temperature']);
    const context = await generate({ model: LLM, chat: chat('x'), sampling: { max_tokens: 10_000_000 } });
    expect(context.error).toMatchObject({ code: grpc.status.INVALID_ARGUMENT, details: expect.stringMatching(/context length/) });
    expect(context.error!.metadata.get('conveyor-error-code')).toEqual(['context_length_exceeded']);
    expect((await generate({ model: 'nope', text: 'x' })).error).toMatchObject({ code: grpc.status.INVALID_ARGUMENT });
    expect((await generate({ model: LLM })).error).toMatchObject({ code: grpc.status.INVALID_ARGUMENT, details: expect.stringMatching(/prompt/) });
  });

  it('a cancelled call aborts the request and frees its blocks', async () => {
    const cancelled = cancelledCount(model);
    const call = clients.generation['Generate']!({ model: LLM, chat: chat('long'), sampling: LONG }) as grpc.ClientReadableStream<Reply>;
    await new Promise<void>((resolve) => call.once('data', () => resolve()));
    call.on('error', () => {}); // CANCELLED, expected
    call.cancel();
    await expectAbortedAndIdle(model, cancelled);
  });
});

// ---------------------------------------------------------------------------------------------

const bytes = (text: string) => Buffer.from(text, 'utf8');

function streamRequest(id: string, prompt: string, extra: { stream?: boolean; maxTokens?: number; parameters?: Reply } = {}): Reply {
  const inputs: Reply[] = [{ name: 'text_input', datatype: 'BYTES', shape: [1], contents: { bytes_contents: [bytes(prompt)] } }];
  if (extra.stream !== undefined) inputs.push({ name: 'stream', datatype: 'BOOL', shape: [1], contents: { bool_contents: [extra.stream] } });
  if (extra.maxTokens !== undefined) inputs.push({ name: 'max_tokens', datatype: 'INT32', shape: [1], contents: { int_contents: [extra.maxTokens] } });
  return { model_name: LLM, id, inputs, parameters: extra.parameters ?? {} };
}

/** text_output of a ModelStreamInferResponse (raw BYTES: 4-byte length, then the text). */
function textOutput(response: Reply): string {
  const raw = (response['infer_response'] as { raw_output_contents: Buffer[] }).raw_output_contents[0]!;
  return raw.subarray(4, 4 + raw.readUInt32LE(0)).toString('utf8');
}
const isFinal = (response: Reply) => (response['infer_response'] as { parameters: Record<string, { bool_param?: boolean }> }).parameters['triton_final_response']?.bool_param === true;
const responseId = (response: Reply) => (response['infer_response'] as { id: string } | null)?.id;

const samplingParameters = { temperature: { double_param: 0 }, ignore_eos: { bool_param: true } };

describe('ModelStreamInfer on the LLM (decoupled, Triton vLLM-backend style)', () => {
  it('answers stream=false with one final response and stream=true per step, ids matched, errors kept on the stream', async () => {
    const call = clients.inference['ModelStreamInfer']!() as grpc.ClientDuplexStream<Reply, Reply>;
    const responses: Reply[] = [];
    call.on('data', (r: Reply) => responses.push(r));
    const ended = new Promise((resolve) => call.on('end', resolve));
    const prompt = 'Once upon a time';
    call.write(streamRequest('whole', prompt, { stream: false, maxTokens: 10, parameters: samplingParameters }));
    call.write(streamRequest('steps', prompt, { stream: true, maxTokens: 10, parameters: samplingParameters }));
    call.write(streamRequest('bad', prompt, { parameters: { temperature: { string_param: '-3' } } }));
    call.write(streamRequest('strings', prompt, { maxTokens: 4, parameters: { temperature: { string_param: '0' }, ignore_eos: { string_param: 'true' } } }));
    call.end();
    await ended;

    const expected = await engineOutput(model, { prompt: { kind: 'text', text: prompt }, sampling: { ...GREEDY, max_tokens: 10 } });
    const whole = responses.filter((r) => responseId(r) === 'whole');
    expect(whole).toHaveLength(1);
    expect(isFinal(whole[0]!)).toBe(true);
    // The vLLM backend prepends the prompt to a non-streamed text_output.
    expect(textOutput(whole[0]!)).toBe(prompt + expected.text);

    const steps = responses.filter((r) => responseId(r) === 'steps');
    expect(steps.length).toBeGreaterThan(2);
    expect(steps.map(isFinal)).toEqual([...Array(steps.length - 1).fill(false), true]);
    expect(steps.map(textOutput).join('')).toBe(expected.text);

    const errors = responses.filter((r) => r['error_message'] !== '');
    expect(errors).toHaveLength(1);
    expect(errors[0]!['error_message']).toMatch(/temperature/);
    const strings = responses.filter((r) => responseId(r) === 'strings');
    expect(textOutput(strings[0]!)).toBe(prompt + (await engineOutput(model, { prompt: { kind: 'text', text: prompt }, sampling: { ...GREEDY, max_tokens: 4 } })).text);
  });

  it('keeps unary ModelInfer UNIMPLEMENTED for the decoupled LLM, as Triton does', async () => {
    const error = await new Promise<grpc.ServiceError>((resolve) => clients.inference['ModelInfer']!(streamRequest('u', 'x'), (e: grpc.ServiceError) => resolve(e)));
    expect(error.code).toBe(grpc.status.UNIMPLEMENTED);
  });

  it('cancelling the stream aborts its generations and frees their blocks', async () => {
    const cancelled = cancelledCount(model);
    const call = clients.inference['ModelStreamInfer']!() as grpc.ClientDuplexStream<Reply, Reply>;
    call.on('error', () => {}); // CANCELLED, expected
    call.write(streamRequest('a', 'first', { stream: true, parameters: { max_tokens: { int64_param: 1000 }, ignore_eos: { bool_param: true } } }));
    call.write(streamRequest('b', 'second', { stream: true, parameters: { max_tokens: { int64_param: 1000 }, ignore_eos: { bool_param: true } } }));
    const seen = new Set<string>();
    await new Promise<void>((resolve) =>
      call.on('data', (r: Reply) => {
        seen.add(responseId(r)!);
        if (seen.size === 2) resolve();
      }),
    );
    call.cancel();
    await expectAbortedAndIdle(model, cancelled, 2);
  });
});
