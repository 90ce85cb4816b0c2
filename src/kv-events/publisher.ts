// The KV events publisher of one engine, on the engine worker thread: vLLM's ZmqEventPublisher
// contract over the only import of zeromq. Each non-empty batch of pool events gets the next
// sequence number (from 0), goes out on a PUB socket as [topic, sequence, batch] and into a
// bounded replay buffer. A ROUTER socket answers a replay request — a REQ client's frame holding
// a start sequence (8 bytes, big-endian) — with one [sequence, batch] reply per buffered batch
// from that sequence on, then [-1, empty] to end the stream.
//
// Sending never blocks the engine: publish() is synchronous and sends are chained in order.
// Past max_queue_size unsent batches a batch skips the PUB socket (a subscriber sees the gap in
// sequence numbers) but stays in the replay buffer, as a slow subscriber's missed batches do.

import { Publisher, Router } from 'zeromq';
import type { KvEventsConfig } from '../contracts/kv-events.js';
import type { KvCacheEvent } from '../kv-cache/cache-events.js';
import { ReplayBuffer } from './replay-buffer.js';
import { encodeBatch, END_OF_REPLAY, readSequenceFrame, sequenceFrame } from './wire.js';

const EMPTY = new Uint8Array(0);
const unixSeconds = (): number => (performance.timeOrigin + performance.now()) / 1000;

/** vLLM's rule: bind a wildcard, ipc:// or inproc:// endpoint; connect to any other. */
export function bindsEndpoint(endpoint: string): boolean {
  return endpoint.includes('*') || endpoint.includes('::') || endpoint.startsWith('ipc://') || endpoint.startsWith('inproc://');
}

export class KvEventPublisher {
  private nextSequence = 0;
  private sending: Promise<void> = Promise.resolve();
  private queued = 0;
  private closed = false;
  private replayLoop: Promise<void> = Promise.resolve();
  /** Batches that skipped the PUB socket because max_queue_size were waiting. */
  numSkipped = 0;

  private constructor(
    private readonly config: KvEventsConfig,
    private readonly pub: Publisher,
    private readonly router: Router | null,
    private readonly replay: ReplayBuffer,
    private readonly log: (line: string) => void,
  ) {}

  static async open(config: KvEventsConfig, log: (line: string) => void): Promise<KvEventPublisher> {
    const pub = new Publisher({ sendHighWaterMark: config.hwm, linger: 0 });
    let router: Router | null = null;
    try {
      if (bindsEndpoint(config.endpoint)) await pub.bind(config.endpoint);
      else pub.connect(config.endpoint);
      if (config.replayEndpoint !== null) {
        router = new Router({ linger: 0 });
        await router.bind(config.replayEndpoint);
      }
    } catch (error) {
      pub.close();
      router?.close();
      throw new Error(`kv events: cannot open ${config.endpoint}${config.replayEndpoint ? ` / ${config.replayEndpoint}` : ''}: ${(error as Error).message}`);
    }
    const publisher = new KvEventPublisher(config, pub, router, new ReplayBuffer(config.bufferSteps), log);
    if (router) publisher.replayLoop = publisher.serveReplays(router);
    log(`kv events: publishing topic '${config.topic}' on ${publisher.endpoint}${router ? `, replay on ${publisher.replayEndpoint}` : ''}`);
    return publisher;
  }

  /** The PUB endpoint as bound (a wildcard port resolved), or as given when connected. */
  get endpoint(): string {
    return this.pub.lastEndpoint ?? this.config.endpoint;
  }

  get replayEndpoint(): string | null {
    return this.router?.lastEndpoint ?? null;
  }

  /** The sequence number the next batch will carry. */
  get sequence(): number {
    return this.nextSequence;
  }

  /** One batch of the step's events (nothing when there are none). */
  publish(events: readonly KvCacheEvent[]): void {
    if (events.length === 0 || this.closed) return;
    const sequence = this.nextSequence++;
    const payload = encodeBatch(unixSeconds(), events);
    this.replay.push({ sequence, payload });
    if (this.queued >= this.config.maxQueueSize) {
      this.numSkipped++;
      return;
    }
    this.queued++;
    const frames = [this.config.topic, sequenceFrame(sequence), payload];
    this.sending = this.sending
      .then(() => this.pub.send(frames))
      .catch((error: unknown) => this.log(`kv events: batch ${sequence} not sent: ${(error as Error).message}`))
      .finally(() => {
        this.queued--;
      });
  }

  /** Publishes AllBlocksCleared (the pool goes away with the engine), sends what is queued, closes. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.publish([{ kind: 'cleared' }]);
    this.closed = true;
    await this.sending;
    this.pub.close();
    this.router?.close();
    await this.replayLoop;
  }

  private async serveReplays(router: Router): Promise<void> {
    try {
      for await (const frames of router) await this.answerReplay(router, frames);
    } catch (error) {
      if (!this.closed) this.log(`kv events: replay socket failed: ${(error as Error).message}`);
    }
  }

  private async answerReplay(router: Router, frames: Buffer[]): Promise<void> {
    // [identity, empty delimiter, start sequence] from a REQ or DEALER client; a DEALER that
    // sends no delimiter gets replies without one.
    const identity = frames[0];
    const start = frames[frames.length - 1];
    const delimited = frames.length === 3;
    if ((frames.length !== 2 && !delimited) || (delimited && frames[1]!.length !== 0) || identity === undefined || start === undefined) {
      this.log(`kv events: ignored a replay request of ${frames.length} frames (want identity, delimiter, start sequence)`);
      return;
    }
    const head = delimited ? [identity, EMPTY] : [identity];
    const startSequence = readSequenceFrame(start);
    if (startSequence === null) this.log(`kv events: replay request with a ${start.length}-byte start sequence (want 8): answered with the end marker only`);
    else for (const batch of this.replay.since(startSequence)) await router.send([...head, sequenceFrame(batch.sequence), batch.payload]);
    await router.send([...head, END_OF_REPLAY, EMPTY]);
  }
}
