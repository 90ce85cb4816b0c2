// Clients that stop reading cannot hold the server (issue 35), for the streams
// undelivered-output.test.ts does not cover: the OpenAI Responses event stream (the OpenAI SDK,
// its stream never iterated), Triton's generate_stream (its 1 MB id echoed in every event),
// conveyor.v1.GenerationService/Generate and KServe ModelStreamInfer
// with several decoupled LLM requests on one call (gRPC over node:http2 with the call's stream
// paused, so HTTP/2 flow control holds the server's output). While the model unloads or the
// server drains, such a client is dropped
// after --undelivered-output-timeout-secs whatever the send timeouts say: unload returns within
// the bound (plus slack for a loaded machine), SIGTERM exits within it, and the client, reading
// again, finds its stream ended in its protocol's error shape (UNAVAILABLE) when those last
// words reached it within the grace, or cut. Every wait is for an event or a state.
//
// The Anthropic Messages stream goes through the same SseWriter and farewell, but the tiny model
// cannot fill loopback's socket buffers (2.6-3.8 MB) through it (≤ 4,096 tokens of ~110 bytes);
// the Responses stream can, because it echoes the request's metadata in response.created and
// response.in_progress.
import { request as httpRequest } from 'node:http';
import { type ClientHttp2Session, connect, constants } from 'node:http2';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import OpenAI from 'openai';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { LLM } from '../support/generation.js';
import { BOUND_SECS, expectDrainWithinBound, generatedTokens, SLACK_MS, timedUnload, undeliveredOutputServers } from '../support/undelivered-output.js';

const PROTOS = join(import.meta.dirname, '..', '..', 'protos');
type Reply = Record<string, unknown>;

const { explicitServer, cliServer } = undeliveredOutputServers();
// Registered after the servers' hook, so it runs before it (afterEach hooks run in reverse): the sessions go first.
const sessions: ClientHttp2Session[] = [];
afterEach(() => {
  for (const session of sessions.splice(0)) session.destroy();
});

const DEFINITION = loadSync(['generate.proto', 'grpc_service.proto'], { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true, includeDirs: [PROTOS] });

/** A method's request encoder, from the protos the server serves. */
function encoder(service: string, method: string): (request: Reply) => Buffer {
  return (DEFINITION[service] as unknown as Record<string, { requestSerialize: (r: Reply) => Buffer }>)[method]!.requestSerialize;
}

/**
 * A gRPC call made over node:http2 whose stream is paused from the start, so HTTP/2 flow control
 * holds the server's output once the window is full: a client that really reads nothing.
 * (@grpc/grpc-js's client keeps reading its socket while a call's readable is paused.)
 */
function pausedCall(address: string, path: string, messages: readonly Buffer[]): { resume(): void; ended: Promise<{ status?: string; message?: string; rstCode: number }> } {
  const session = connect(`http://${address}`);
  sessions.push(session);
  session.on('error', () => {});
  const stream = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers' });
  stream.on('error', () => {});
  stream.pause();
  let trailers: Record<string, unknown> = {};
  stream.on('trailers', (t) => (trailers = t));
  const ended = new Promise<{ status?: string; message?: string; rstCode: number }>((resolve) =>
    stream.on('close', () => resolve({ status: trailers['grpc-status'] as string | undefined, message: decodeURIComponent(String(trailers['grpc-message'] ?? '')), rstCode: stream.rstCode ?? 0 })),
  );
  for (const message of messages) {
    const frame = Buffer.alloc(5 + message.length);
    frame.writeUInt32BE(message.length, 1);
    message.copy(frame, 5);
    stream.write(frame);
  }
  stream.end();
  // Reading again, the data is drained so the call's end is seen.
  return { resume: () => stream.resume(), ended };
}

/**
 * How a dropped gRPC client's call ends: UNAVAILABLE naming the unload when the status reached it
 * within the grace, else the stream reset that follows.
 */
function expectDropped(end: { status?: string; message?: string; rstCode: number }): void {
  if (end.status === undefined) expect(end.rstCode).toBe(constants.NGHTTP2_CANCEL);
  else {
    expect(end.status).toBe(String(grpc.status.UNAVAILABLE));
    expect(end.message).toMatch(/unloading and this client read nothing/);
  }
}

/** Generate with heavy deltas (20 top logprobs a token): far more than HTTP/2's window. */
const GENERATE = encoder(
  'conveyor.v1.GenerationService',
  'Generate',
)({
  model: LLM,
  text: 'never read',
  sampling: { max_tokens: 3000, ignore_eos: true, temperature: 0, logprobs: true, top_logprobs: 20 },
});

/** ModelStreamInfer requests for the LLM, streamed per step; each response echoes the request's 64 KB id, so one fills HTTP/2's window. */
const STREAM_REQUESTS = [0, 1, 2, 3].map((i) =>
  encoder(
    'inference.GRPCInferenceService',
    'ModelStreamInfer',
  )({
    model_name: LLM,
    id: `${i}`.repeat(64 * 1024),
    inputs: [
      { name: 'text_input', datatype: 'BYTES', shape: [1], contents: { bytes_contents: [Buffer.from(`never read ${i}`)] } },
      { name: 'stream', datatype: 'BOOL', shape: [1], contents: { bool_contents: [true] } },
      { name: 'max_tokens', datatype: 'INT32', shape: [1], contents: { int_contents: [3000] } },
    ],
    parameters: { ignore_eos: { bool_param: true } },
  }),
);

describe('an OpenAI SDK Responses stream never iterated', () => {
  it('is dropped within the bound once its model unloads, ending with error and response.failed or cut', async () => {
    const { server, model } = await explicitServer();
    const openai = new OpenAI({ baseURL: `${server.http}/v1`, apiKey: 'unused', maxRetries: 0 });
    // The metadata is echoed in response.created and response.in_progress: 8 MB, more than
    // loopback's socket buffers take from a client that does not read.
    const stream = await openai.responses.create({ model: LLM, input: 'never read', stream: true, max_output_tokens: 3000, metadata: { blob: 'm'.repeat(4 * 1024 * 1024) } });
    await vi.waitFor(() => expect(model.engine.numActive).toBe(1), { timeout: 60_000, interval: 20 });

    expect(await timedUnload(server)).toBeLessThan(BOUND_SECS * 1000 + SLACK_MS);
    const seen: string[] = [];
    let failure: unknown;
    try {
      for await (const event of stream) seen.push(event.type);
    } catch (error) {
      failure = error;
    }
    expect(seen).not.toContain('response.completed');
    // The SDK throws on the `error` event when it got through, or on the cut connection.
    expect(failure).toBeDefined();
    if (seen.includes('response.created') && String(failure).includes('unloading')) expect(String(failure)).toMatch(/read nothing for 1 s/);
  }, 300_000);
});

describe('a Triton generate_stream client that stops reading', () => {
  it('is dropped within the bound once its model unloads, its stream ending with a {"error": …} event or cut', async () => {
    const { server, model } = await explicitServer();
    // The id is echoed in every response: 1 MB an event, past loopback's socket buffers in a few tokens.
    const body = JSON.stringify({ id: 'i'.repeat(1024 * 1024), text_input: 'never read', stream: true, parameters: { max_tokens: 3000, ignore_eos: true } });
    let resumeReading = (): void => {};
    let tail = '';
    const ended = new Promise<string>((resolve) => {
      const request = httpRequest(`${server.http}/v2/models/${LLM}/generate_stream`, { method: 'POST', agent: false, headers: { 'content-type': 'application/json' } }, (response) => {
        expect(response.statusCode).toBe(200);
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (tail = (tail + chunk).slice(-4096)));
        response.once('end', () => resolve('end')).once('error', () => resolve('cut'));
        response.pause();
        resumeReading = () => response.resume();
      });
      request.on('error', () => resolve('cut'));
      request.end(body);
    });
    await vi.waitFor(() => expect(model.engine.numActive).toBe(1), { timeout: 60_000, interval: 20 });
    // Behind for certain: more 1 MB events made than any socket buffer holds.
    await vi.waitFor(async () => expect(await generatedTokens(server.http)).toBeGreaterThan(16), { timeout: 120_000, interval: 100 });

    expect(await timedUnload(server)).toBeLessThan(BOUND_SECS * 1000 + SLACK_MS);
    resumeReading();
    const how = await ended;
    const last =
      tail
        .split('\n\n')
        .filter((event) => event !== '')
        .at(-1) ?? '';
    // Its last words in Triton's shape where they reached it within the grace; never the final response.
    if (how === 'end') expect(JSON.parse(last.replace(/^data: /, ''))).toEqual({ error: expect.stringMatching(/unloading and this client read nothing for 1 s/) });
    else expect(how).toBe('cut');
  }, 300_000);
});

describe('gRPC streams whose client reads nothing', () => {
  it('GenerationService/Generate: the unload completes within the bound and the call ends UNAVAILABLE (or is reset)', async () => {
    const { server, model } = await explicitServer();
    const call = pausedCall(server.grpcAddress, '/conveyor.v1.GenerationService/Generate', [GENERATE]);
    await vi.waitFor(() => expect(model.engine.numActive).toBe(1), { timeout: 60_000, interval: 20 });

    expect(await timedUnload(server)).toBeLessThan(BOUND_SECS * 1000 + SLACK_MS);
    call.resume();
    expectDropped(await call.ended);
  }, 300_000);

  it('ModelStreamInfer with 4 decoupled LLM requests: the unload completes within the bound and the call ends UNAVAILABLE (or is reset)', async () => {
    const { server, model } = await explicitServer();
    const call = pausedCall(server.grpcAddress, '/inference.GRPCInferenceService/ModelStreamInfer', STREAM_REQUESTS);
    await vi.waitFor(() => expect(model.engine.numActive).toBe(STREAM_REQUESTS.length), { timeout: 60_000, interval: 20 });

    expect(await timedUnload(server)).toBeLessThan(BOUND_SECS * 1000 + SLACK_MS);
    call.resume();
    // Not OK with an error_message per request: the call itself was dropped.
    expectDropped(await call.ended);
  }, 300_000);

  it('SIGTERM with a Generate call that reads nothing exits within the bound, not --exit-timeout-secs', async () => {
    const server = await cliServer();
    const call = pausedCall(server.grpcAddress, '/conveyor.v1.GenerationService/Generate', [GENERATE]);
    // More tokens made than HTTP/2's window lets through to a client that reads nothing.
    await vi.waitFor(async () => expect(await generatedTokens(server.http)).toBeGreaterThan(500), { timeout: 120_000, interval: 200 });

    await expectDrainWithinBound(server);
    call.resume();
    expect((await call.ended).status).not.toBe(String(grpc.status.OK));
  }, 300_000);
});
