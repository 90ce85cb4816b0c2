// The KV events round trip on the real tiny decoder: an engine with a small KV budget runs a
// workload that stores, hits and evicts prefix blocks while publishing each step's events; a
// real ZeroMQ subscriber rebuilds the cached-block set from the events alone (asking the replay
// socket for whatever it missed before its subscription took) and must hold exactly the pool's
// set. A late subscriber then rebuilds the same set from the replay socket alone.
import { decode } from '@msgpack/msgpack';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Subscriber } from 'zeromq';
import type { GenerateRequest } from '../../../src/contracts/generate.js';
import type { KvEventsConfig } from '../../../src/contracts/kv-events.js';
import { EngineCore, type EngineConfig } from '../../../src/engine-worker/engine-core.js';
import { KvEventPublisher } from '../../../src/kv-events/publisher.js';
import { readSequenceFrame } from '../../../src/kv-events/wire.js';
import { openModelRunner } from '../../../src/runners/create-runner.js';
import { DEFAULT_REPOSITORY } from '../../../models/default-repository.js';
import { replayKvEvents } from '../../support/kv-events.js';
import { GREEDY_SAMPLING } from '../../support/sampling.js';

const MODEL = join(DEFAULT_REPOSITORY, 'qwen3-tiny', '1', 'onnx', 'model.onnx');
const TOPIC = 'kv@127.0.0.1:8000@qwen3-tiny';
const BLOCK = 4;

type WireEvent = [string, ...unknown[]];

/** A subscriber's view of one pool, from events alone (vLLM's tagged arrays). */
class CachedSet {
  readonly hashes = new Set<number>();
  nextSequence = 0;
  stored = 0;
  removed = 0;
  apply(sequence: number, payload: Uint8Array): void {
    if (sequence < this.nextSequence) return; // already applied (live and replay overlap)
    expect(sequence).toBe(this.nextSequence);
    const [ts, events, rank] = decode(payload) as [number, WireEvent[], number];
    expect(typeof ts).toBe('number');
    expect(rank).toBe(0);
    for (const event of events) {
      if (event[0] === 'BlockStored') {
        const [, hashes, , tokenIds, blockSize, loraId, medium] = event as [string, number[], number | null, number[], number, null, string];
        expect([tokenIds.length, blockSize, loraId, medium]).toEqual([hashes.length * BLOCK, BLOCK, null, 'GPU']);
        for (const h of hashes) this.hashes.add(h);
        this.stored += hashes.length;
      } else if (event[0] === 'BlockRemoved') {
        for (const h of event[1] as number[]) expect(this.hashes.delete(h)).toBe(true);
        this.removed += (event[1] as number[]).length;
      } else {
        expect(event).toEqual(['AllBlocksCleared']);
        this.hashes.clear();
      }
    }
    this.nextSequence = sequence + 1;
  }
}

/** Replays every batch from `start` into a cached set, or hands each sequence number to a callback. */
const replay = (endpoint: string, start: number, into: CachedSet | ((sequence: number) => void)): Promise<number> =>
  replayKvEvents(endpoint, start, (sequence, payload) => (into instanceof CachedSet ? into.apply(sequence, payload) : into(sequence)));

const request = (id: string, prompt: number[]): GenerateRequest => ({
  id,
  promptTokenIds: prompt,
  sampling: GREEDY_SAMPLING,
  priority: 0,
  cacheSalt: null,
  stop: { maxTokens: 3, minTokens: 0, eosTokenIds: [], ignoreEos: true, stopTokenIds: [] },
});
/** Prompts over a few shared prefixes, so later ones hit earlier ones' blocks and the small pool must evict. */
const workload = (): GenerateRequest[] =>
  Array.from({ length: 24 }, (_, i) => {
    const prefix = Array.from({ length: 12 }, (_, t) => 1000 + (i % 4) * 100 + t);
    const suffix = Array.from({ length: 5 + (i % 3) }, (_, t) => 20_000 + i * 10 + t);
    return request(`r${i}`, [...prefix, ...suffix]);
  });

describe('KV events over ZeroMQ', () => {
  let engine: EngineCore;
  let publisher: KvEventPublisher;
  const live = new CachedSet();
  let subscriber: Subscriber;
  let listening: Promise<void>;

  beforeAll(async () => {
    const config: EngineConfig & { kvEvents: KvEventsConfig } = {
      modelPath: MODEL,
      device: 'cpu',
      intraOpNumThreads: 1,
      maxNumSeqs: 4,
      maxNumBatchedTokens: 32,
      maxModelLen: 128,
      blockSize: BLOCK,
      kvCacheBytes: 160 << 10,
      enablePrefixCaching: true,
      sampleableVocabSize: 151_669,
      kvEvents: { endpoint: 'tcp://127.0.0.1:*', replayEndpoint: 'tcp://127.0.0.1:*', bufferSteps: 100_000, hwm: 100_000, maxQueueSize: 100_000, topic: TOPIC },
    };
    engine = EngineCore.create(config, await openModelRunner(config), () => {});
    publisher = await KvEventPublisher.open(config.kvEvents, () => {});
    subscriber = new Subscriber({ linger: 0 });
    subscriber.connect(publisher.endpoint);
    subscriber.subscribe(TOPIC);
    // The live subscriber: a batch past the next expected one means the subscription missed some
    // (a SUB socket joins late); the replay socket fills the gap, then live batches continue.
    listening = (async () => {
      for await (const [topic, seq, payload] of subscriber) {
        expect(topic!.toString()).toBe(TOPIC);
        const sequence = readSequenceFrame(seq!)!;
        if (sequence > live.nextSequence) await replay(publisher.replayEndpoint!, live.nextSequence, live);
        live.apply(sequence, payload!);
      }
    })().catch((error: unknown) => {
      if (!String(error).includes('closed')) throw error;
    });
  }, 120_000);

  afterAll(async () => {
    subscriber?.close();
    await listening;
    await publisher?.close();
    await engine?.release();
  });

  it('a subscriber rebuilds the pool cached set from the events alone', async () => {
    const numBlocks = engine.info.numBlocks;
    expect(numBlocks).toBeLessThanOrEqual(40); // small enough that the workload must evict
    publisher.publish(engine.takeKvEvents()); // the new pool's AllBlocksCleared
    const pending = workload();
    for (let step = 0; step < 5000 && (pending.length > 0 || engine.hasWork()); step++) {
      // Two arrivals per step: several requests share the pool and the early prefixes come back.
      for (const r of pending.splice(0, 2)) engine.add(r);
      if (!engine.hasWork()) continue;
      await engine.step();
      publisher.publish(engine.takeKvEvents());
    }
    expect(engine.hasWork()).toBe(false);
    const last = publisher.sequence;
    // Everything published reaches the subscriber live or by replay; wait for the last batch.
    await expect.poll(() => live.nextSequence, { timeout: 60_000, interval: 20 }).toBe(last);
    expect(live.hashes).toEqual(new Set(engine.cachedBlockHashes()));
    expect(live.hashes.size).toBeGreaterThan(0);
    expect(live.removed).toBeGreaterThan(0); // evictions happened
    expect(engine.stats().prefixCacheHits).toBeGreaterThan(0); // prefix hits happened
    engine.checkIntegrity();
  }, 300_000);

  it('a late subscriber rebuilds the same set from the replay socket alone', async () => {
    const late = new CachedSet();
    const count = await replay(publisher.replayEndpoint!, 0, late);
    expect(count).toBe(publisher.sequence);
    expect(late.hashes).toEqual(new Set(engine.cachedBlockHashes()));
    // A start past the first batches answers only the rest.
    const tail: number[] = [];
    await replay(publisher.replayEndpoint!, publisher.sequence - 2, (sequence) => tail.push(sequence));
    expect(tail).toEqual([publisher.sequence - 2, publisher.sequence - 1]);
  }, 60_000);
});
