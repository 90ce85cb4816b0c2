// KV events through the real server: qwen3-tiny configured with the kv_events_config parameter
// (vLLM's --kv-events-config JSON) publishes to a ZeroMQ subscriber the test binds (an endpoint
// without a wildcard is connected to, as in vLLM). Two chats with the same long system prompt
// through the OpenAI SDK: the first stores its prompt's full blocks (BlockStored, a hash chain
// whose parents were stored before), the second hits them in the prefix cache and stores only
// its own tail; the engine's first batch clears the subscriber's view (AllBlocksCleared). Like a
// real consumer, the subscriber asks the replay socket for any batch its SUB socket missed (the
// publisher connects while the engine starts, and ZeroMQ drops what it sends before the
// subscription has joined).
import { createServer } from 'node:net';
import { decode } from '@msgpack/msgpack';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Subscriber } from 'zeromq';
import { readSequenceFrame } from '../../../src/kv-events/wire.js';
import { replayKvEvents } from '../../support/kv-events.js';
import { configOf, makeRepository, startTestServer, type TestServer } from '../../support/server.js';

const TOPIC = 'kv@conveyor-test@qwen3-tiny';
type WireEvent = [string, ...unknown[]];

let server: TestServer;
let subscriber: Subscriber;
const batches: { sequence: number; events: WireEvent[] }[] = [];
let listening: Promise<void>;
let replayEndpoint: string;

/** Applies a batch once, in sequence order (live and replayed batches may overlap). */
function receive(sequence: number, payload: Uint8Array): void {
  if (sequence < batches.length) return;
  expect(sequence).toBe(batches.length);
  const [, events] = decode(payload) as [number, WireEvent[], number];
  batches.push({ sequence, events });
}

/** A loopback port nothing listens on, for the replay socket the server binds. */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

beforeAll(async () => {
  subscriber = new Subscriber({ linger: 0 });
  await subscriber.bind('tcp://127.0.0.1:*');
  replayEndpoint = `tcp://127.0.0.1:${await freePort()}`;
  listening = (async () => {
    for await (const [topic, seq, payload] of subscriber) {
      expect(topic!.toString()).toBe(TOPIC);
      const sequence = readSequenceFrame(seq!)!;
      if (sequence > batches.length) await replayKvEvents(replayEndpoint, batches.length, receive);
      receive(sequence, payload!);
    }
  })().catch((error: unknown) => {
    if (!String(error).includes('closed')) throw error;
  });
  const json = JSON.stringify({ enable_kv_cache_events: true, endpoint: subscriber.lastEndpoint, replay_endpoint: replayEndpoint, topic: TOPIC });
  const withEvents = configOf('qwen3-tiny', 'qwen3-tiny', (text) => `${text}\nparameters: { key: "kv_events_config" value: { string_value: "${json.replaceAll('"', '\\"')}" } }\n`);
  server = await startTestServer(await makeRepository([{ name: 'qwen3-tiny', from: 'qwen3-tiny', config: withEvents }]));
  // Subscribed only once the engine runs, as a consumer that joins late: the engine's first
  // batch has gone by and must come from the replay socket.
  subscriber.subscribe(TOPIC);
}, 120_000);

afterAll(async () => {
  await server?.stop();
  subscriber?.close();
  await listening;
});

const stored = (): { hashes: number[]; parent: number | null }[] =>
  batches.flatMap((b) => b.events.filter((e) => e[0] === 'BlockStored').map((e) => ({ hashes: e[1] as number[], parent: e[2] as number | null })));

describe('KV events from a served model', () => {
  it('publishes the blocks a chat stores, and a prefix hit stores only the new tail', async () => {
    const client = new OpenAI({ baseURL: `${server.http}/v1`, apiKey: 'unused', maxRetries: 0 });
    const system = `You are a careful assistant. ${'Answer briefly and cite the section you used. '.repeat(12)}`;
    const chat = (question: string) =>
      client.chat.completions.create({
        model: 'qwen3-tiny',
        messages: [
          { role: 'system', content: system },
          { role: 'user', content: question },
        ],
        max_tokens: 4,
        temperature: 0,
      });

    const first = await chat('What is the capital of France?');
    const promptBlocks = Math.floor(first.usage!.prompt_tokens / 16); // block_size 16 in the default config
    await vi.waitFor(() => expect(stored().flatMap((s) => s.hashes).length).toBeGreaterThanOrEqual(promptBlocks), { timeout: 20_000 });
    const afterFirst = stored().flatMap((s) => s.hashes).length;

    const second = await chat('And of Spain?');
    expect(second.usage!.prompt_tokens_details?.cached_tokens ?? 0).toBeGreaterThan(0);
    await vi.waitFor(() => expect(stored().flatMap((s) => s.hashes).length).toBeGreaterThan(afterFirst), { timeout: 20_000 });

    // Sequence numbers from 0 without gaps (receive() refuses a gap; the replay socket fills
    // what the live socket missed, up to the last batch published); the first batch opens with
    // AllBlocksCleared.
    await replayKvEvents(replayEndpoint, batches.length, receive);
    expect(batches.map((b) => b.sequence)).toEqual(batches.map((_, i) => i));
    expect(batches[0]!.events[0]).toEqual(['AllBlocksCleared']);
    // Every stored run continues a chain already published (or starts one), and no hash is stored twice.
    const seen = new Set<number>();
    for (const { hashes, parent } of stored()) {
      if (parent !== null) expect(seen.has(parent), `parent ${parent} published before`).toBe(true);
      for (const h of hashes) {
        expect(seen.has(h)).toBe(false);
        seen.add(h);
      }
    }
    // The second chat shares the system prompt's blocks: it stored fewer new blocks than its prompt holds.
    expect(seen.size - afterFirst).toBeLessThan(Math.floor(second.usage!.prompt_tokens / 16));
  }, 120_000);
});
