// KV events through the real server: qwen3-tiny configured with the kv_events_config parameter
// (vLLM's --kv-events-config JSON) publishes to a ZeroMQ subscriber the test binds (an endpoint
// without a wildcard is connected to, as in vLLM). Two chats with the same long system prompt
// through the OpenAI SDK: the first stores its prompt's full blocks (BlockStored, a hash chain
// whose parents were stored before), the second hits them in the prefix cache and stores only
// its own tail; the engine's first batch clears the subscriber's view (AllBlocksCleared).
import { decode } from '@msgpack/msgpack';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Subscriber } from 'zeromq';
import { readSequenceFrame } from '../../../src/kv-events/wire.js';
import { configOf, makeRepository, startTestServer, type TestServer } from '../../support/server.js';

const TOPIC = 'kv@conveyor-test@qwen3-tiny';
type WireEvent = [string, ...unknown[]];

let server: TestServer;
let subscriber: Subscriber;
const batches: { sequence: number; events: WireEvent[] }[] = [];
let listening: Promise<void>;

beforeAll(async () => {
  subscriber = new Subscriber({ linger: 0 });
  await subscriber.bind('tcp://127.0.0.1:*');
  subscriber.subscribe(TOPIC);
  listening = (async () => {
    for await (const [topic, seq, payload] of subscriber) {
      expect(topic!.toString()).toBe(TOPIC);
      const [, events] = decode(payload!) as [number, WireEvent[], number];
      batches.push({ sequence: readSequenceFrame(seq!)!, events });
    }
  })().catch((error: unknown) => {
    if (!String(error).includes('closed')) throw error;
  });
  const json = JSON.stringify({ enable_kv_cache_events: true, endpoint: subscriber.lastEndpoint, topic: TOPIC });
  const withEvents = configOf('qwen3-tiny', 'qwen3-tiny', (text) => `${text}\nparameters: { key: "kv_events_config" value: { string_value: "${json.replaceAll('"', '\\"')}" } }\n`);
  server = await startTestServer(await makeRepository([{ name: 'qwen3-tiny', from: 'qwen3-tiny', config: withEvents }]));
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

    // Sequence numbers from 0 without gaps; the first batch opens with AllBlocksCleared.
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
