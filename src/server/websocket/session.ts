// One /v1/ws connection: many generations multiplexed by client-chosen ids. Each generation runs
// on its own, so a bad request or a failure answers only its id. A cancel message, or the socket
// closing, aborts the generations concerned; the engine frees their blocks within one step.
// A frame past --offthread-json-bytes is read on a parse worker; frames after it wait their turn
// (a cancel never overtakes its generate) and the socket is not read meanwhile.

import type { RawData } from 'ws';
import { ConveyorError, invalidArg } from '../../errors.js';
import type { LlmLookup } from '../generation/lookup.js';
import { deltaMessage, doneMessage, duplicateId, errorMessage, type ClientMessage } from './messages.js';
import { movable, type OffThreadParser } from '../kit/offthread-parse.js';
import { fromWire, OFFTHREAD_FRAME_MODULE, readFrame, type OffThreadFrameInput, type ReadFrame } from './offthread-frame.js';
import { Outbox, type OutboxLimits, type SendingSocket } from './outbox.js';
import { type ClosingModel, FAREWELL_GRACE_MS, undeliveredReason, waitOrGiveUp } from '../kit/stalled-writes.js';

export interface SessionLimits extends OutboxLimits {
  /** Live generations one socket may hold. */
  readonly maxGenerations: number;
  /** Deepest JSON nesting a client message may have. */
  readonly jsonMaxDepth: number;
  /**
   * Invalid messages in a row before the socket is closed (1008): answering each costs the
   * server work, and no real client sends a stream of garbage.
   */
  readonly maxInvalidMessages: number;
}

/** The events and controls of a socket the session uses (a `ws` WebSocket). */
export interface SessionSocket extends SendingSocket {
  on(event: 'message', listener: (data: RawData, isBinary: boolean) => void): unknown;
  on(event: 'close' | 'error', listener: () => void): unknown;
  /** Stop and restart reading the client's frames. */
  pause(): void;
  resume(): void;
  /** Destroy the connection at once (no closing handshake: the client is not reading). */
  terminate(): void;
  /** Start the closing handshake. */
  close(code: number, reason: string): void;
}

type GenerateMessage = Extract<ClientMessage, { type: 'generate' }>;

export class WebSocketSession {
  private readonly live = new Map<string, AbortController>();
  private readonly outbox: Outbox;
  private closed = false;
  private invalidInARow = 0;
  /** Frames read on the worker or waiting behind one, in arrival order. */
  private queued = 0;
  private queue: Promise<void> = Promise.resolve();
  private outboxBehind = false;
  private reading = true;

  constructor(
    private readonly socket: SessionSocket,
    private readonly lookup: LlmLookup,
    private readonly limits: SessionLimits,
    private readonly offThread?: OffThreadParser,
    /** The TCP connection under the socket, when the front end has it (see onStalled). */
    private readonly connection?: { destroy(error: Error): void },
  ) {
    // While the client is behind its frames are not read, so even a flood of bad frames is
    // answered no faster than it reads; one that stops reading altogether is dropped, which
    // aborts its generations and frees their blocks.
    this.outbox = new Outbox(socket, limits, {
      onBehind: () => {
        this.outboxBehind = true;
        this.updateReading();
      },
      onCaughtUp: () => {
        this.outboxBehind = false;
        this.updateReading();
      },
      onStalled: (reason) => {
        // A client that stopped reading leaves thousands of frames queued on the connection.
        // Destroyed with an error, every queued write's callback gets that one error; terminate()
        // would have Node build a fresh ERR_STREAM_DESTROYED for each (~100 ms on this thread).
        if (this.connection) this.connection.destroy(new Error(`WebSocket client dropped: ${reason}`));
        else socket.terminate();
        this.close();
      },
    });
    socket.on('message', (data, isBinary) => this.onMessage(data, isBinary));
    socket.on('close', () => this.close());
    socket.on('error', () => this.close());
  }

  /** Ids of the generations still running. */
  get liveIds(): string[] {
    return [...this.live.keys()];
  }

  private onMessage(data: RawData, isBinary: boolean): void {
    if (this.closed) return;
    const bytes = Array.isArray(data) ? Buffer.concat(data) : Buffer.isBuffer(data) ? data : Buffer.from(data);
    const offThread = !isBinary && this.offThread?.wants(bytes.byteLength) === true;
    if (!offThread && this.queued === 0) return this.onFrame(this.readInline(bytes, isBinary));
    this.queued++;
    this.updateReading();
    this.queue = this.queue
      .then(async () => {
        const frame = offThread ? await this.readOffThread(bytes) : this.readInline(bytes, isBinary);
        if (!this.closed) this.onFrame(frame);
      })
      .finally(() => {
        this.queued--;
        this.updateReading();
      });
  }

  private readInline(bytes: Buffer, isBinary: boolean): ReadFrame {
    if (isBinary) return { error: invalidArg('binary frames are not part of this protocol; send JSON text') };
    return readFrame(bytes, this.limits.jsonMaxDepth);
  }

  private async readOffThread(bytes: Buffer): Promise<ReadFrame> {
    const moved = movable(bytes);
    const input: OffThreadFrameInput = { bytes: moved.bytes, maxDepth: this.limits.jsonMaxDepth };
    try {
      return fromWire(await this.offThread!.run(OFFTHREAD_FRAME_MODULE, input, moved.transfer));
    } catch (error) {
      return { error };
    }
  }

  /** The socket is read unless its client is behind on our frames or frames wait to be parsed. */
  private updateReading(): void {
    const read = !this.outboxBehind && this.queued === 0;
    if (read === this.reading || this.closed) return;
    this.reading = read;
    if (read) this.socket.resume();
    else this.socket.pause();
  }

  private onFrame(frame: ReadFrame): void {
    if (!('message' in frame)) {
      const { error, id } = frame;
      // A frame reusing a live id is refused as a duplicate first, so no other error names a running generation.
      return this.refuseInvalid(errorMessage(id !== undefined && this.live.has(id) ? duplicateId(id) : error, id));
    }
    const { message } = frame;
    this.invalidInARow = 0;
    if (message.type === 'cancel') {
      // A cancel for an id that is not live is ignored: it may have finished a moment ago.
      this.live.get(message.id)?.abort(new ConveyorError('CANCELLED', 'cancelled by the client'));
      return;
    }
    if (this.live.has(message.id)) return this.outbox.send(errorMessage(duplicateId(message.id), message.id));
    if (this.live.size >= this.limits.maxGenerations) {
      return this.outbox.send(errorMessage(new ConveyorError('UNAVAILABLE', `at most ${this.limits.maxGenerations} generations may run on one socket`), message.id));
    }
    const controller = new AbortController();
    this.live.set(message.id, controller);
    void this.run(message, controller);
  }

  /** Answers an invalid message; the last one a client may send in a row also closes the socket. */
  private refuseInvalid(reply: unknown): void {
    this.outbox.send(reply);
    if (++this.invalidInARow < this.limits.maxInvalidMessages) return;
    this.socket.close(1008, `${this.limits.maxInvalidMessages} invalid messages in a row`);
    this.close();
  }

  private async run(message: GenerateMessage, controller: AbortController): Promise<void> {
    const { id } = message;
    const release = (): void => {
      if (this.live.get(id) === controller) this.live.delete(id);
    };
    // A lease for the generation's whole life, as every HTTP and gRPC request holds one: it loads
    // a model served on demand, and keeps it from idle unload and eviction while it streams.
    let lease: { release(): void } | undefined;
    try {
      lease = await this.lookup.acquire?.(message.model, message.keepAliveMs);
      if (this.closed || controller.signal.aborted) return;
      const model = this.lookup.llmModel(message.model, message.version);
      const prepared = await model.prepare(message.input);
      for await (const event of model.generate(prepared, controller.signal)) {
        // While the model is going (unload, sleep, swap, drain), a client that reads nothing is
        // not waited for past --undelivered-output-timeout-secs: it is disconnected.
        if (!(await waitOrGiveUp(this.outbox.ready(), model))) return this.dropWhileClosing(model);
        // Leaving the loop ends the generation; the engine aborts it if it was still running.
        if (this.closed) return;
        if (event.text !== '' || event.tokenIds.length > 0) this.outbox.send(deltaMessage(id, event));
        if (event.finishReason !== null) {
          // Released before done goes out, so the client may reuse the id as soon as it reads it.
          release();
          this.outbox.send(doneMessage(id, event));
        }
      }
    } catch (error) {
      release();
      this.outbox.send(errorMessage(error, id));
    } finally {
      release();
      lease?.release();
    }
  }

  /**
   * Ends every generation of the socket (its model is going and the client reads nothing), then
   * closes it as "going away" (1001) with the reason; a client that never takes the close frame
   * is cut off after a moment.
   */
  private dropWhileClosing(model: ClosingModel): void {
    if (this.closed) return;
    this.close();
    this.socket.close(1001, undeliveredReason(model).slice(0, 123));
    setTimeout(() => this.socket.terminate(), FAREWELL_GRACE_MS).unref();
  }

  private close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const controller of this.live.values()) controller.abort(new ConveyorError('CANCELLED', 'the WebSocket closed'));
    this.live.clear();
    this.outbox.close();
  }
}
