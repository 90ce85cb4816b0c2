// Supervision of a model version's worker threads (the LLM engine, or a classic model's N
// instances): the owner reports each unexpected death, the supervisor restarts that worker after
// the backoff restart-policy.ts decides, and gives up on a crash loop. Readiness is read from
// status() at the instant it is asked, so it turns false in the same tick a worker dies.

import { DEFAULT_RESTART_POLICY, recordCrash, type RestartPolicy } from './restart-policy.js';

/** What supervision says about a model version right now. */
export interface SupervisionStatus {
  /** True while the version can take requests: a worker runs and no crash loop was declared. */
  readonly ready: boolean;
  /** The repository index state this implies (Triton's vocabulary). */
  readonly state: 'READY' | 'UNAVAILABLE';
  /** Why it is not ready (or runs degraded); '' when every worker runs. */
  readonly reason: string;
  /** Workers restarted successfully since the version loaded. */
  readonly restarts: number;
}

export interface SupervisorTimers {
  set(callback: () => void, delayMs: number): unknown;
  clear(handle: unknown): void;
}

const systemTimers: SupervisorTimers = {
  set: (callback, delayMs) => setTimeout(callback, delayMs).unref(),
  clear: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

export interface SupervisorOptions {
  /** For logs and reasons: "model:version engine" or "model:version instance". */
  readonly label: string;
  readonly numWorkers: number;
  /** Starts a fresh worker in `slot`; a rejection counts as another crash of that slot. */
  readonly respawn: (slot: number) => Promise<void>;
  readonly log: (line: string) => void;
  /** Called once when a crash loop is declared (the owner fails what still waits). */
  readonly onGiveUp?: (reason: string) => void;
  readonly policy?: RestartPolicy;
  /** Monotonic ms. */
  readonly clock?: () => number;
  readonly timers?: SupervisorTimers;
}

export class WorkerSupervisor {
  private readonly policy: RestartPolicy;
  private readonly clock: () => number;
  private readonly timers: SupervisorTimers;
  private crashTimesMs: readonly number[] = [];
  /** Slots whose worker is dead, with the cause of its latest crash. */
  private readonly down = new Map<number, string>();
  private readonly pendingRestarts = new Set<unknown>();
  private failure: string | undefined;
  private stopped = false;
  private restarts = 0;

  constructor(private readonly options: SupervisorOptions) {
    this.policy = options.policy ?? DEFAULT_RESTART_POLICY;
    this.clock = options.clock ?? (() => performance.now());
    this.timers = options.timers ?? systemTimers;
  }

  /** The worker in `slot` died unexpectedly (exit, uncaught error, fatal message). */
  crashed(slot: number, cause: string): void {
    if (this.stopped || this.failure !== undefined) return;
    this.down.set(slot, cause);
    const { crashTimesMs, decision } = recordCrash(this.policy, this.crashTimesMs, this.clock());
    this.crashTimesMs = crashTimesMs;
    if (decision.kind === 'give_up') {
      this.failure = `${decision.reason} (last: ${cause}); load the model again to retry`;
      this.options.log(`${this.options.label}: ${this.failure}`);
      this.cancelRestarts();
      this.options.onGiveUp?.(this.failure);
      return;
    }
    this.options.log(
      `${this.options.label} ${slot} crashed (${cause}); restarting in ${decision.delayMs} ms ` +
        `(crash ${decision.crashesInWindow} within the window; ${this.policy.maxCrashesInWindow} make a crash loop)`,
    );
    const handle = this.timers.set(() => {
      this.pendingRestarts.delete(handle);
      void this.restart(slot);
    }, decision.delayMs);
    this.pendingRestarts.add(handle);
  }

  status(): SupervisionStatus {
    const restarts = this.restarts;
    if (this.failure !== undefined) return { ready: false, state: 'UNAVAILABLE', reason: this.failure, restarts };
    if (this.down.size === 0) return { ready: true, state: 'READY', reason: '', restarts };
    const cause = [...this.down.values()].at(-1)!;
    if (this.down.size >= this.options.numWorkers) {
      return { ready: false, state: 'UNAVAILABLE', reason: `restarting after a crash: ${cause}`, restarts };
    }
    const reason = `${this.down.size} of ${this.options.numWorkers} workers restarting after a crash: ${cause}`;
    return { ready: true, state: 'READY', reason, restarts };
  }

  /** True once a crash loop was declared: nothing will be restarted. */
  get gaveUp(): boolean {
    return this.failure !== undefined;
  }

  /** The version is closing: no restart happens from now on. */
  stop(): void {
    this.stopped = true;
    this.cancelRestarts();
  }

  private async restart(slot: number): Promise<void> {
    if (this.stopped || this.failure !== undefined) return;
    try {
      await this.options.respawn(slot);
    } catch (error) {
      if (!this.stopped) this.crashed(slot, `restart failed: ${error instanceof Error ? error.message : String(error)}`);
      return;
    }
    if (this.stopped) return;
    this.down.delete(slot);
    this.restarts += 1;
    this.options.log(`${this.options.label} ${slot} restarted`);
  }

  private cancelRestarts(): void {
    for (const handle of this.pendingRestarts) this.timers.clear(handle);
    this.pendingRestarts.clear();
  }
}
