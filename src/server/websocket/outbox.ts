// Flow control for one WebSocket: counts the bytes handed to the socket that it has not yet
// flushed to the network, and lets producers wait while that is above a high-water mark. A slow
// client then pauses its own generations (the engine's per-request queue holds token ids only,
// bounded by max_tokens) instead of the server buffering frames without bound.
//
// Every frame goes through here, error replies included, so the owner can also stop reading a
// client that is behind (it cannot flood us with bad frames whose answers it never reads). A
// client that stays behind with no flush progress for `stallTimeoutMs`, or lets more than
// `maxBufferedBytes` pile up, is reported as stalled: the owner drops it.

/** What the outbox needs of a `ws` WebSocket. */
export interface SendingSocket {
  readonly readyState: number;
  send(data: string, callback: (error?: Error) => void): void;
}

export interface OutboxLimits {
  /** Bytes in flight above which ready() waits and the client counts as behind. */
  readonly highWaterBytes: number;
  /** Bytes in flight past which the client is stalled at once. */
  readonly maxBufferedBytes: number;
  /** How long a client that is behind may go without any frame flushing. */
  readonly stallTimeoutMs: number;
}

export interface OutboxEvents {
  /** The client fell behind (above the high-water mark). */
  onBehind?(): void;
  /** It caught up (down to half the mark). */
  onCaughtUp?(): void;
  /** It reads too slowly to keep: drop it. Called at most once. */
  onStalled?(reason: string): void;
}

const OPEN = 1;

export class Outbox {
  private unflushed = 0;
  private waiters: (() => void)[] = [];
  private behind = false;
  private stalled = false;
  private stallTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly socket: SendingSocket,
    private readonly limits: OutboxLimits,
    private readonly events: OutboxEvents = {},
  ) {}

  get open(): boolean {
    return this.socket.readyState === OPEN && !this.stalled;
  }

  /** Bytes sent but not yet flushed to the network. */
  get pendingBytes(): number {
    return this.unflushed;
  }

  send(message: unknown): void {
    if (!this.open) return;
    const text = JSON.stringify(message);
    const bytes = Buffer.byteLength(text);
    this.unflushed += bytes;
    // ws calls back once the frame is written to the socket (or with an error when it closed).
    this.socket.send(text, () => this.flushed(bytes));
    if (this.unflushed > this.limits.maxBufferedBytes) return this.stall(`more than ${this.limits.maxBufferedBytes} bytes unread`);
    if (!this.behind && this.unflushed > this.limits.highWaterBytes) {
      this.behind = true;
      this.stallTimer = setTimeout(() => this.stall(`nothing read for ${this.limits.stallTimeoutMs} ms`), this.limits.stallTimeoutMs);
      this.stallTimer.unref();
      this.events.onBehind?.();
    }
  }

  /** Resolves at once unless the client is behind; then when it has caught up by half, or the socket closed. */
  ready(): Promise<void> {
    if (this.unflushed <= this.limits.highWaterBytes || !this.open) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Releases every waiter and stops the stall clock (the socket closed). */
  close(): void {
    this.behind = false;
    clearTimeout(this.stallTimer);
    this.wake();
  }

  private flushed(bytes: number): void {
    this.unflushed -= bytes;
    if (!this.behind) return;
    // Progress: the client reads, if slowly; its stall clock starts over.
    this.stallTimer?.refresh();
    if (this.unflushed > this.limits.highWaterBytes / 2) return;
    this.behind = false;
    clearTimeout(this.stallTimer);
    this.events.onCaughtUp?.();
    this.wake();
  }

  private stall(reason: string): void {
    if (this.stalled) return;
    this.stalled = true;
    this.close();
    this.events.onStalled?.(reason);
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const resolve of waiters) resolve();
  }
}
