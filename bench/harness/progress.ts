// Progress on stderr while a benchmark runs. On a terminal one line is redrawn in place; in a log
// (CI, a pipe, a test) only an occasional line is written, so logs stay short but a long run
// still shows it is alive.

export interface ProgressUpdate {
  readonly label: string;
  readonly done: number;
  readonly total: number;
  readonly etaMs: number | undefined;
}

export interface ProgressOptions {
  readonly stream?: { write(text: string): unknown; isTTY?: boolean };
  readonly now?: () => number;
  /** Minimum time between lines when not on a terminal. */
  readonly logIntervalMs?: number;
}

export class Progress {
  private readonly stream: { write(text: string): unknown; isTTY?: boolean };
  private readonly now: () => number;
  private readonly logIntervalMs: number;
  private startedAt: number;
  private lastDrawAt = -Infinity;
  private drawnInPlace = false;

  constructor(
    private readonly title: string,
    options: ProgressOptions = {},
  ) {
    this.stream = options.stream ?? process.stderr;
    this.now = options.now ?? (() => performance.now());
    this.logIntervalMs = options.logIntervalMs ?? 15_000;
    this.startedAt = this.now();
  }

  /** Elapsed time counts from here: model loading before the first run is not part of it. */
  restartClock(): void {
    this.startedAt = this.now();
  }

  private get tty(): boolean {
    return this.stream.isTTY === true;
  }

  update(update: ProgressUpdate): void {
    const now = this.now();
    const last = update.done === update.total;
    // A terminal redraw costs little but still steals time from the thread being measured.
    const interval = this.tty ? 100 : this.logIntervalMs;
    if (!last && update.done !== 0 && now - this.lastDrawAt < interval) return;
    this.lastDrawAt = now;
    const line = formatProgress(this.title, update, now - this.startedAt);
    if (this.tty) {
      this.stream.write(`\r\x1b[K${line}`);
      this.drawnInPlace = true;
    } else {
      this.stream.write(`${line}\n`);
    }
  }

  /** A message that must not be overwritten by the progress line. */
  log(message: string): void {
    this.endLine();
    this.stream.write(`${message}\n`);
  }

  finish(): void {
    this.endLine();
  }

  private endLine(): void {
    if (this.drawnInPlace) this.stream.write('\n');
    this.drawnInPlace = false;
  }
}

export function formatProgress(title: string, update: ProgressUpdate, elapsedMs: number): string {
  const head = `[${title}] ${update.done}/${update.total} ${update.label} · elapsed ${formatDuration(elapsedMs)}`;
  if (update.done === update.total) return head;
  return `${head} · ETA ${update.etaMs === undefined ? '?' : formatDuration(update.etaMs)}`;
}

/** 850ms, 12.3s, 4m05s: short enough for a progress line. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 59_950) return `${(ms / 1000).toFixed(1)}s`;
  const seconds = Math.round(ms / 1000);
  return `${Math.floor(seconds / 60)}m${String(seconds % 60).padStart(2, '0')}s`;
}
