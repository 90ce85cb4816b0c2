// Answers every client can read (issue 35), with the real clients that could not read them: a
// body over the limit answered 413 in its protocol's shape while the client is still sending —
// the OpenAI SDK gets an APIError it does not retry, Node's http and Python's urllib read the
// status, and Expect: 100-continue is refused before the body; a body declared gzip that is not
// gzip is a 400 naming the coding; an empty body with a JSON content-type is no body (Responses
// delete/cancel as the Python SDK sends them, /sleep, /wake_up, the repository index); a BERT
// sequence of zero tokens is refused naming the input over HTTP and gRPC.
import { execFile } from 'node:child_process';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import { status as grpcStatus } from '@grpc/grpc-js';
import OpenAI, { APIConnectionError, APIError } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LLM } from '../support/generation.js';
import { configOf, makeRepository, startTestServer, type TestServer } from '../support/server.js';
import { grpcClients, unaryCall, type GrpcClients } from '../support/streams.js';

const MB = 1_000_000;
const KSERVE_LIMIT = 4 * 1024 * 1024;
let server: TestServer;
let grpc: GrpcClients;

beforeAll(async () => {
  const repository = await makeRepository([
    { name: LLM, from: 'qwen3-tiny', config: configOf('qwen3-tiny', LLM) },
    { name: 'bert', from: 'bert-tiny', config: configOf('bert-tiny', 'bert') },
  ]);
  // The JSON routes keep the default limit (8 MiB): the 10, 20 and 50 MB bodies pass it.
  server = await startTestServer(repository, ['--http-max-body-bytes', String(KSERVE_LIMIT)]);
  grpc = grpcClients(server.grpcAddress);
}, 120_000);
afterAll(async () => {
  grpc?.close();
  await server?.stop();
});

/** Requests the server received for `path` while `run` ran (Node's http.server.request.start channel). */
async function countingRequests<T>(path: string, run: () => Promise<T>): Promise<{ result: T; requests: number }> {
  let requests = 0;
  const onStart = (message: unknown): void => {
    const { request, server: http } = message as { request: IncomingMessage; server: { address(): unknown } };
    if ((http.address() as { port?: number } | null)?.port === server.httpPort && request.url === path) requests++;
  };
  subscribe('http.server.request.start', onStart);
  try {
    return { result: await run(), requests };
  } finally {
    unsubscribe('http.server.request.start', onStart);
  }
}

interface Answer {
  readonly status: number;
  readonly body: string;
  /** Whether the server said 100 Continue (only asked for with Expect). */
  readonly continued: boolean;
}

/** POSTs `body` with Node's http (no agent), writing it whole unless `expect` asks to wait for 100 Continue. */
function nodePost(path: string, body: Buffer, headers: Record<string, string> = {}, expect = false): Promise<Answer> {
  return new Promise((resolve, reject) => {
    let continued = false;
    const request = httpRequest({
      host: '127.0.0.1',
      port: server.httpPort,
      path,
      method: 'POST',
      agent: false,
      headers: { 'content-type': 'application/json', 'content-length': String(body.byteLength), ...(expect ? { expect: '100-continue' } : {}), ...headers },
    });
    request.on('response', (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body: text, continued }));
      response.on('error', reject);
    });
    // A write failing after the answer came is the client's own business; before it, the test fails.
    request.on('error', reject);
    if (expect) {
      request.on('continue', () => {
        continued = true;
        request.end(body);
      });
      request.flushHeaders();
    } else {
      request.end(body);
    }
  });
}

const chatBody = (bytes: number): Buffer => Buffer.from(JSON.stringify({ model: LLM, messages: [{ role: 'user', content: 'x'.repeat(bytes) }], max_tokens: 1 }));
const openaiError = (text: string) => (JSON.parse(text) as { error: { type: string; message: string } }).error;

describe('a body over the limit', () => {
  it('is a 413 APIError to the OpenAI SDK, not a connection error, and is not retried', async () => {
    const client = new OpenAI({ baseURL: `${server.http}/v1`, apiKey: 'unused', maxRetries: 2 });
    const { result: error, requests } = await countingRequests('/v1/chat/completions', () =>
      client.chat.completions.create({ model: LLM, messages: [{ role: 'user', content: 'x'.repeat(10 * MB) }], max_tokens: 1 }).catch((e: unknown) => e),
    );
    expect(error).not.toBeInstanceOf(APIConnectionError);
    expect(error).toBeInstanceOf(APIError);
    expect(error).toMatchObject({ status: 413, type: 'invalid_request_error' });
    expect(requests).toBe(1);
  });

  it('is read by Node http writing its whole body (no Expect), in each protocol’s shape', async () => {
    const chat = await nodePost('/v1/chat/completions', chatBody(10 * MB));
    expect(chat.status).toBe(413);
    expect(openaiError(chat.body)).toMatchObject({ type: 'invalid_request_error' });
    const messages = await nodePost('/v1/messages', Buffer.from(JSON.stringify({ model: LLM, max_tokens: 1, messages: [{ role: 'user', content: 'x'.repeat(50 * MB) }] })));
    expect(messages.status).toBe(413);
    expect(JSON.parse(messages.body)).toMatchObject({ type: 'error', error: { type: 'request_too_large' } });
    const infer = await nodePost('/v2/models/bert/infer', Buffer.alloc(10 * MB, 0x20));
    expect(infer.status).toBe(413);
    expect(JSON.parse(infer.body)).toEqual({ error: expect.any(String) });
  });

  it('is refused before the body is sent when the client asks Expect: 100-continue', async () => {
    const refused = await nodePost('/v1/chat/completions', chatBody(10 * MB), {}, true);
    expect(refused).toMatchObject({ status: 413, continued: false });
    expect(openaiError(refused.body)).toMatchObject({ type: 'invalid_request_error' });
    const kserve = await nodePost('/v2/models/bert/infer', Buffer.alloc(KSERVE_LIMIT + 1, 0x20), {}, true);
    expect(kserve).toMatchObject({ status: 413, continued: false });
    // Under the limit the client is told to go on, and the request is served.
    const allowed = await nodePost('/tokenize', Buffer.from(JSON.stringify({ model: LLM, prompt: 'hello' })), {}, true);
    expect(allowed).toMatchObject({ status: 200, continued: true });
    expect(JSON.parse(allowed.body)).toMatchObject({ count: expect.any(Number) });
  });

  it('is read by a client that sends its whole body before reading, as curl without Expect', async () => {
    const body = chatBody(20 * MB);
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(server.httpPort, '127.0.0.1');
      let text = '';
      socket.on('error', reject);
      socket.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.byteLength}\r\n\r\n`);
      socket.pause();
      socket.write(body, () => {
        socket.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
        socket.on('end', () => resolve(text));
        socket.resume();
      });
    });
    expect(answer).toMatch(/^HTTP\/1\.1 413 /);
    expect(answer).toMatch(/\r\nconnection: close\r\n/i);
    expect(openaiError(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toMatchObject({ type: 'invalid_request_error' });
  });

  it('is read by Python urllib, which sends the whole body before reading', async (context) => {
    const script = [
      'import sys, urllib.request, urllib.error',
      'body = b\'{"model": "qwen3", "prompt": "\' + b\'x\' * 20_000_000 + b\'", "max_tokens": 1}\'',
      "request = urllib.request.Request(sys.argv[1], data=body, headers={'Content-Type': 'application/json'})",
      'try:',
      '    urllib.request.urlopen(request, timeout=30)',
      "    print('200')",
      'except urllib.error.HTTPError as e:',
      '    print(e.code, e.read().decode())',
    ].join('\n');
    // Asynchronously: the server answering it runs on this thread.
    const python = await new Promise<{ error?: Error; stdout: string; stderr: string }>((resolve) =>
      execFile('python3', ['-c', script, `${server.http}/v1/completions`], { timeout: 30_000 }, (error, stdout, stderr) => resolve({ ...(error ? { error } : {}), stdout, stderr })),
    );
    if (python.error !== undefined && (python.error as NodeJS.ErrnoException).code === 'ENOENT') {
      console.log('skipped: python3 is not installed here');
      context.skip();
    }
    expect(python.stderr).toBe('');
    const [status, ...rest] = python.stdout.trim().split(' ');
    expect(status).toBe('413');
    expect(openaiError(rest.join(' '))).toMatchObject({ type: 'invalid_request_error' });
  });
});

describe('a malformed body', () => {
  it('declared gzip but not gzip is a 400 naming the coding, not a 413', async () => {
    const notGzip = Buffer.concat([Buffer.from('{"inputs":[]}'), Buffer.from([0xff, 0xff, 0xff, 0x7f])]);
    const answer = await nodePost('/v2/models/bert/infer', notGzip, { 'content-encoding': 'gzip' });
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.body)).toEqual({ error: expect.stringMatching(/^failed to decompress the gzip request body/) });
  });
});

describe('an empty body with a JSON content-type', () => {
  const json = { 'content-type': 'application/json' };

  it('is no body to Responses cancel and delete, as the Python SDK sends them', async () => {
    const client = new OpenAI({ baseURL: `${server.http}/v1`, apiKey: 'unused', maxRetries: 0 });
    const queued = await client.responses.create({ model: LLM, input: 'Later', background: true, max_output_tokens: 4 });
    const cancelled = await client.responses.cancel(queued.id, { headers: json });
    expect(cancelled).toMatchObject({ id: queued.id, background: true });
    const deleted = await client.responses.delete(queued.id, { headers: json }).then(
      () => 'deleted',
      (e: unknown) => e,
    );
    expect(deleted).toBe('deleted');
  });

  it('is no body to /sleep, /wake_up and the repository index', async () => {
    const post = (path: string) => fetch(`${server.http}${path}`, { method: 'POST', headers: json, body: '' });
    expect((await post(`/sleep?model=${LLM}`)).status).toBe(200);
    expect(await (await fetch(`${server.http}/is_sleeping?model=${LLM}`)).json()).toEqual({ is_sleeping: true });
    expect((await post(`/wake_up?model=${LLM}`)).status).toBe(200);
    expect(await (await fetch(`${server.http}/is_sleeping?model=${LLM}`)).json()).toEqual({ is_sleeping: false });
    const index = await post('/v2/repository/index');
    expect(index.status).toBe(200);
    // A route that needs a body still refuses none, in its own words.
    const chat = await post('/v1/chat/completions');
    expect(chat.status).toBe(400);
    expect((await chat.json()) as object).toMatchObject({ error: { type: 'invalid_request_error' } });
  }, 30_000);
});

describe('a zero-length tensor', () => {
  const empty = ['input_ids', 'attention_mask', 'token_type_ids'].map((name) => ({ name, datatype: 'INT64', shape: [1, 0] }));

  it('is a 400 naming the input over KServe HTTP', async () => {
    const answer = await nodePost('/v2/models/bert/infer', Buffer.from(JSON.stringify({ inputs: empty.map((t) => ({ ...t, data: [] })) })));
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.body)).toEqual({ error: expect.stringContaining("input 'input_ids' has a zero-length dimension 1") });
  });

  it('is INVALID_ARGUMENT naming the input over gRPC', async () => {
    const { error } = await unaryCall(grpc.inference, 'ModelInfer', { model_name: 'bert', inputs: empty.map((t) => ({ ...t, contents: { int64_contents: [] } })) });
    expect(error).toMatchObject({ code: grpcStatus.INVALID_ARGUMENT, details: expect.stringContaining("input 'input_ids' has a zero-length dimension 1") });
  });
});
