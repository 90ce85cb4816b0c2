// The /v1/ws WebSocket protocol (src/server/websocket/PROTOCOL.md) against the real server
// with the tiny LLM, through the `ws` client: multiplexing, cancel, errors isolated to their id,
// disconnects that free the engine, and greedy output equal to the engine's own.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { LlmModel } from '../../src/serving/llm-backend.js';
import { cancelledCount, engineOutput, expectAbortedAndIdle, GREEDY, LLM, LONG, startLlmServer } from '../support/generation.js';
import type { TestServer } from '../support/server.js';

let server: TestServer;
let model: LlmModel;

beforeAll(async () => {
  ({ server, model } = await startLlmServer());
}, 120_000);
afterAll(async () => server?.stop());

type Message = Record<string, unknown> & { type: string; id?: string };

/** A client socket that records every message and lets a test wait for one. */
class Client {
  readonly messages: Message[] = [];
  private waiters: (() => void)[] = [];

  private constructor(readonly socket: WebSocket) {
    socket.on('message', (data) => {
      this.messages.push(JSON.parse(String(data)) as Message);
      for (const wake of this.waiters.splice(0)) wake();
    });
  }

  static async open(): Promise<Client> {
    const socket = new WebSocket(`ws://127.0.0.1:${server.httpPort}/v1/ws`);
    await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
    return new Client(socket);
  }

  send(message: object): void {
    this.socket.send(JSON.stringify(message));
  }

  async waitFor(match: (m: Message) => boolean, timeoutMs = 30_000): Promise<Message> {
    const deadline = Date.now() + timeoutMs;
    while (true) {
      const found = this.messages.find(match);
      if (found) return found;
      if (Date.now() > deadline) throw new Error(`timed out; got ${JSON.stringify(this.messages.slice(-5))}`);
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 200);
      });
    }
  }

  of(id: string): Message[] {
    return this.messages.filter((m) => m.id === id);
  }

  text(id: string): string {
    return this.of(id)
      .filter((m) => m.type === 'delta')
      .map((m) => m['text'])
      .join('');
  }

  tokens(id: string): number[] {
    return this.of(id)
      .filter((m) => m.type === 'delta')
      .flatMap((m) => m['token_ids'] as number[]);
  }

  close(): void {
    this.socket.close();
  }
}

const isEnd = (id: string) => (m: Message) => m.id === id && (m.type === 'done' || m.type === 'error');
const chat = (content: string) => [{ role: 'user', content }];

describe('WebSocket /v1/ws', () => {
  it('multiplexes concurrent generations by id, each equal to the engine’s greedy output', async () => {
    const client = await Client.open();
    const prompts = { a: 'Hello!', b: 'Tell me a story', c: 'abc' };
    for (const [id, content] of Object.entries(prompts)) client.send({ type: 'generate', id, model: LLM, messages: chat(content), ...GREEDY });
    client.send({ type: 'generate', id: 'text', model: LLM, prompt: 'Once upon a time', ...GREEDY });
    const ids = [...Object.keys(prompts), 'text'];
    await Promise.all(ids.map((id) => client.waitFor(isEnd(id))));
    // Frames of different ids interleave on the one socket.
    const order = client.messages.filter((m) => m.type === 'delta').map((m) => m.id);
    expect(new Set(order.slice(0, 8)).size).toBeGreaterThan(1);
    for (const [id, content] of Object.entries(prompts)) {
      const expected = await engineOutput(model, { prompt: { kind: 'chat', messages: chat(content) }, sampling: GREEDY });
      expect(client.text(id)).toBe(expected.text);
      expect(client.tokens(id)).toEqual(expected.tokenIds);
      const done = client.of(id).at(-1)!;
      expect(done).toMatchObject({ type: 'done', finish_reason: 'length', usage: { completion_tokens: 12, prompt_tokens: expected.promptTokens } });
      expect((done['usage'] as { prompt_tokens_details: { cached_tokens: number } }).prompt_tokens_details.cached_tokens).toBeGreaterThanOrEqual(0);
    }
    const text = await engineOutput(model, { prompt: { kind: 'text', text: 'Once upon a time' }, sampling: GREEDY });
    expect(client.text('text')).toBe(text.text);
    client.close();
  });

  it('answers a bad request with an error for its id only, while other generations go on', async () => {
    const client = await Client.open();
    client.send({ type: 'generate', id: 'good', model: LLM, messages: chat('hi'), ...GREEDY });
    client.send({ type: 'generate', id: 'bad', model: LLM, messages: chat('hi'), temperature: -1 });
    client.send({ type: 'generate', id: 'nomodel', model: 'nope', prompt: 'x' });
    client.send({ type: 'generate', id: 'extra', model: LLM, prompt: 'x', tools: [] });
    client.send({ type: 'generate', id: 'long', model: LLM, prompt: { length: 1 }, max_tokens: 10 });
    client.send({ type: 'generate', id: 'ctx', model: LLM, prompt: 'x', max_tokens: 10_000_000 });
    client.socket.send('not json');
    const bad = await client.waitFor(isEnd('bad'));
    expect(bad).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', code: 'invalid_arg', param: 'temperature' } });
    expect(await client.waitFor(isEnd('nomodel'))).toMatchObject({ type: 'error', error: { code: 'invalid_arg' } });
    expect(await client.waitFor(isEnd('extra'))).toMatchObject({ type: 'error', error: { param: 'tools' } });
    expect(await client.waitFor(isEnd('long'))).toMatchObject({ type: 'error', error: { param: 'prompt' } });
    expect(await client.waitFor(isEnd('ctx'))).toMatchObject({ type: 'error', error: { code: 'context_length_exceeded', param: 'max_tokens' } });
    expect(await client.waitFor((m) => m.type === 'error' && m.id === undefined)).toMatchObject({ error: { code: 'invalid_arg' } });
    expect(await client.waitFor(isEnd('good'))).toMatchObject({ type: 'done', finish_reason: 'length' });
    expect(client.tokens('good')).toHaveLength(12);
    client.close();
  });

  it('refuses a duplicate live id without disturbing the running generation, then accepts the id again', async () => {
    const client = await Client.open();
    client.send({ type: 'generate', id: 'dup', model: LLM, messages: chat('first'), ...GREEDY, max_tokens: 20 });
    client.send({ type: 'generate', id: 'dup', model: LLM, messages: chat('second'), ...GREEDY });
    expect(await client.waitFor((m) => m.type === 'error')).toMatchObject({ id: 'dup', error: { code: 'already_exists', param: 'id' } });
    expect(await client.waitFor((m) => m.id === 'dup' && m.type === 'done')).toMatchObject({ usage: { completion_tokens: 20 } });
    const before = client.messages.length;
    client.send({ type: 'generate', id: 'dup', model: LLM, messages: chat('again'), ...GREEDY, max_tokens: 2 });
    await client.waitFor((m) => client.messages.indexOf(m) >= before && isEnd('dup')(m));
    expect(client.messages.at(-1)).toMatchObject({ type: 'done', usage: { completion_tokens: 2 } });
    client.close();
  });

  it('a cancel message aborts that generation (finish_reason abort) and frees its blocks', async () => {
    const client = await Client.open();
    const cancelled = cancelledCount(model);
    client.send({ type: 'generate', id: 'stay', model: LLM, messages: chat('short'), ...GREEDY, max_tokens: 30 });
    client.send({ type: 'generate', id: 'go', model: LLM, messages: chat('long'), ...LONG });
    await client.waitFor((m) => m.id === 'go' && m.type === 'delta');
    client.send({ type: 'cancel', id: 'go' });
    expect(await client.waitFor(isEnd('go'))).toMatchObject({ type: 'done', finish_reason: 'abort' });
    expect(await client.waitFor(isEnd('stay'))).toMatchObject({ type: 'done', finish_reason: 'length' });
    client.send({ type: 'cancel', id: 'unknown' }); // ignored
    await expectAbortedAndIdle(model, cancelled);
    expect(client.messages.filter((m) => m.type === 'error')).toEqual([]);
    client.close();
  });

  it('closing the socket mid-stream aborts every generation on it and returns their blocks', async () => {
    const client = await Client.open();
    const cancelled = cancelledCount(model);
    client.send({ type: 'generate', id: 'x', model: LLM, messages: chat('one'), ...LONG });
    client.send({ type: 'generate', id: 'y', model: LLM, prompt: 'two', ...LONG });
    await client.waitFor((m) => m.id === 'x' && m.type === 'delta');
    await client.waitFor((m) => m.id === 'y' && m.type === 'delta');
    expect(model.engine.numActive).toBe(2);
    client.socket.terminate();
    await expectAbortedAndIdle(model, cancelled, 2);
  });

  it('closes (1008) a socket after 100 invalid messages in a row; a valid one in between resets the count', async () => {
    const client = await Client.open();
    const closed = new Promise<number>((resolve) => client.socket.once('close', (code) => resolve(code)));
    for (let i = 0; i < 99; i++) client.socket.send('{"type":');
    client.send({ type: 'cancel', id: 'nothing' }); // valid: the count starts over
    for (let i = 0; i < 99; i++) client.socket.send('not json');
    client.send({ type: 'generate', id: 'ok', model: LLM, prompt: 'still here', ...GREEDY });
    expect(await client.waitFor((m) => m.id === 'ok' && m.type === 'done')).toMatchObject({ finish_reason: 'length' });
    for (let i = 0; i < 100; i++) client.socket.send(Buffer.from([1, 2, 3]));
    expect(await closed).toBe(1008);
    expect(client.messages.filter((m) => m.type === 'error')).toHaveLength(99 + 99 + 100);
  });
});
