// The SSE farewell over a real loopback socket (src/server/kit/sse.ts, stalled-writes.ts; issue
// 35): frames of 1 MB are written to a client that stopped reading until its socket buffers are
// full and a write waits; its model is going, so after the bound the client is dropped and the
// stream ends with the front end's error events, queued behind what the client has not read.
// Reading again within the grace, the client finds them at the end of the stream; never reading
// again, it is cut after the grace. The integration tests cannot stall the Anthropic stream (the
// tiny model's events are too small to fill loopback's buffers), and the chat stream only cuts
// where its farewell would be read late; here the farewells (Triton generate_stream's too) are
// read for real.
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { failureEvents as anthropicFarewell } from '../../../../anthropic-compat/messages.js';
import { streamFailureEvents as openaiFarewell } from '../../../../openai-compat/respond.js';
import { generateStreamFarewell } from '../../../../src/server/http/routes/generate.js';
import { type SseFarewell, SseWriter } from '../../../../src/server/kit/sse.js';
import { type ClosingModel, undeliveredReason } from '../../../../src/server/kit/stalled-writes.js';

const BOUND_MS = 200;
const FRAME = { blob: 'x'.repeat(1024 * 1024) };
const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});

interface Stalled {
  readonly model: ClosingModel;
  readonly writer: SseWriter;
  readonly response: ServerResponse;
  /** The client's response, paused since its headers arrived. */
  readonly client: IncomingMessage;
}

/** A stream whose client read its headers and nothing more. */
async function stalledStream(farewell: SseFarewell): Promise<Stalled & { close(): void }> {
  const closing = new AbortController();
  const model: ClosingModel = { name: 'm', closing: closing.signal, undeliveredOutputTimeoutMs: BOUND_MS };
  let serverSide!: { writer: SseWriter; response: ServerResponse };
  const server = createServer((_request, response) => {
    serverSide = { writer: new SseWriter(response, 600_000, model, farewell), response };
    serverSide.writer.open();
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const client = await new Promise<IncomingMessage>((resolve, reject) => {
    const request = httpRequest({ port: (server.address() as AddressInfo).port, host: '127.0.0.1', agent: false }, (response) => {
      response.pause();
      resolve(response);
    });
    request.on('error', reject);
    request.end();
  });
  return { model, ...serverSide, client, close: () => closing.abort() };
}

/** Writes frames while the model is going until the writer gives up on the client (the bound passed on a full socket). */
async function writeUntilDropped(stalled: Stalled): Promise<number> {
  let frames = 0;
  while (!stalled.writer.isClosed) {
    await stalled.writer.send(FRAME);
    frames++;
  }
  return frames;
}

/** The client reads the rest of its stream; resolves with its last `count` events (blank-line separated). */
async function readToEnd(client: IncomingMessage, count: number): Promise<string[]> {
  let tail = '';
  client.setEncoding('utf8');
  client.on('data', (chunk: string) => (tail = (tail + chunk).slice(-64 * 1024)));
  client.resume();
  await new Promise<void>((resolve, reject) => client.once('end', resolve).once('error', reject));
  return tail
    .split('\n\n')
    .filter((event) => event !== '')
    .slice(-count);
}

const expectedMessage = (model: ClosingModel) => `${undeliveredReason(model)}; retry the request`;

describe('the SSE farewell of a client dropped while its model goes', () => {
  it('OpenAI chat and completions: the error chunk then [DONE], behind what the client had not read', async () => {
    const stalled = await stalledStream(openaiFarewell);
    stalled.close();
    // More than one frame went out before a write waited: the farewell is behind them.
    expect(await writeUntilDropped(stalled)).toBeGreaterThan(1);
    const [error, done] = await readToEnd(stalled.client, 2);
    expect(done).toBe('data: [DONE]');
    expect(JSON.parse(error!.replace(/^data: /, ''))).toEqual({ error: { message: expectedMessage(stalled.model), type: 'server_error', param: null, code: 'service_unavailable' } });
  });

  it('Anthropic Messages: the error event, behind what the client had not read', async () => {
    const stalled = await stalledStream(anthropicFarewell);
    stalled.close();
    expect(await writeUntilDropped(stalled)).toBeGreaterThan(1);
    const [error] = await readToEnd(stalled.client, 1);
    const [name, data] = error!.split('\n');
    expect(name).toBe('event: error');
    expect(JSON.parse(data!.replace(/^data: /, ''))).toEqual({ type: 'error', error: { type: 'overloaded_error', message: expectedMessage(stalled.model) } });
  });

  it('Triton generate_stream: the error event in its {"error": …} shape, behind what the client had not read', async () => {
    const stalled = await stalledStream(generateStreamFarewell);
    stalled.close();
    expect(await writeUntilDropped(stalled)).toBeGreaterThan(1);
    const [error] = await readToEnd(stalled.client, 1);
    expect(JSON.parse(error!.replace(/^data: /, ''))).toEqual({ error: expectedMessage(stalled.model) });
  });

  it('a client that never reads again is cut after the grace', async () => {
    const stalled = await stalledStream(anthropicFarewell);
    stalled.close();
    await writeUntilDropped(stalled);
    // The farewell was queued (the response ended), and the connection is destroyed without the client taking it.
    expect(stalled.response.writableEnded).toBe(true);
    await new Promise<void>((resolve) => stalled.response.once('close', resolve));
    expect(stalled.response.socket?.destroyed ?? true).toBe(true);
    const aborted = await new Promise<string>((resolve) => {
      stalled.client.once('error', (error) => resolve(error.message));
      stalled.client.once('end', () => resolve('end'));
      stalled.client.resume();
    });
    expect(aborted).toBe('aborted');
  });
});
