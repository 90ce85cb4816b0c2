// Flow control for one WebSocket: counts the bytes handed to the socket that it has not yet
// flushed to the network, and lets producers wait while that is above a high-water mark. A slow
// client then pauses its own generations (the engine's per-request queue holds token ids only,
// bounded by max_tokens) instead of the server buffering frames without bound.

/** What the outbox needs of a `ws` WebSocket. */
export interface SendingSocket {
  readonly readyState: number;
  send(data: string, callback: (error?: Error) => void): void;
}

const OPEN = 1;

export class Outbox {
  private unflushed = 0;
  private waiters: (() => void)[] = [];

  constructor(
    private readonly socket: SendingSocket,
    /** Bytes in flight above which ready() waits. */
    private readonly highWaterBytes: number,
  ) {}

  get open(): boolean {
    return this.socket.readyState === OPEN;
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
    this.socket.send(text, () => {
      this.unflushed -= bytes;
      if (this.unflushed <= this.highWaterBytes / 2) this.wake();
    });
  }

  /** Resolves at once unless the client is behind; then when it has caught up by half, or the socket closed. */
  ready(): Promise<void> {
    if (this.unflushed <= this.highWaterBytes || !this.open) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Releases every waiter (the socket closed). */
  close(): void {
    this.wake();
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const resolve of waiters) resolve();
  }
}
