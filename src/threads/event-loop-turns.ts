// Work the main thread does for many requests at once — tokenizing a burst of 32 arrivals,
// detokenizing and framing one engine step for 32 streams — would otherwise run back to back in
// one event-loop iteration: a health check or a /metrics scrape that arrives meanwhile waits for
// all of it (measured: 100–300 ms behind a burst). Each unit of such work takes a turn instead:
// turns run first-in first-out, one per iteration (an immediate queued from inside an immediate
// waits for the next iteration), so the loop polls its sockets between any two of them. The
// total work is unchanged; what a waiting socket sees is bounded by one unit rather than all.

type Job = () => void;

export class EventLoopTurns {
  private readonly queue: Job[] = [];
  private head = 0;
  private scheduled = false;

  constructor(private readonly schedule: (run: () => void) => void = setImmediate) {}

  /** Queued jobs not yet run. */
  get pending(): number {
    return this.queue.length - this.head;
  }

  /** Runs `job` in its turn. A job that throws does not stop the ones after it. */
  run(job: Job): void {
    this.queue.push(job);
    if (!this.scheduled) {
      this.scheduled = true;
      this.schedule(this.turn);
    }
  }

  /** Resolves in the caller's turn: `await turns.next()` before a unit of work. */
  next(): Promise<void> {
    return new Promise<void>((resolve) => this.run(resolve));
  }

  private readonly turn = (): void => {
    const job = this.queue[this.head++]!;
    if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue.splice(0, this.head);
      this.head = 0;
    }
    try {
      job();
    } finally {
      if (this.pending > 0) this.schedule(this.turn);
      else this.scheduled = false;
    }
  };
}

/** The main thread's turns, shared by every front end and engine client, so all take turns fairly. */
export const mainThreadTurns = new EventLoopTurns();
