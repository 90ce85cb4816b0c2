// How a download shows: on a terminal, one bar per file redrawn in place; otherwise (logs, CI,
// a server's stdout) one line per file once it is fetched or found in the cache.

import type { FileProgress } from './cache.js';
import type { RepoFile } from './client.js';

const BAR_WIDTH = 24;
/** Redraws at most this often (ms): a fast local copy would otherwise spend its time writing. */
const REDRAW_MS = 100;

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}

/** The bar's text for `done` of `total` bytes (pure). */
export function progressBar(path: string, done: number, total: number): string {
  const fraction = total > 0 ? Math.min(1, done / total) : 1;
  const filled = Math.round(fraction * BAR_WIDTH);
  return `${path} [${'#'.repeat(filled)}${' '.repeat(BAR_WIDTH - filled)}] ${Math.floor(fraction * 100)
    .toString()
    .padStart(3)}% ${formatBytes(done)}/${formatBytes(total)}`;
}

/** A FileProgress writing a bar to `stream` (a TTY), or one `log` line per file. */
export function fileProgress(repo: string, log: (line: string) => void, stream: NodeJS.WriteStream | undefined): FileProgress {
  let file: RepoFile | undefined;
  let done = 0;
  let resumedFrom = 0;
  let drawnAt = 0;
  const draw = (force: boolean): void => {
    if (!stream || !file) return;
    const now = Date.now();
    if (!force && now - drawnAt < REDRAW_MS) return;
    drawnAt = now;
    stream.write(`\r${progressBar(file.path, done, file.size)}\x1b[K`);
  };
  return {
    start(next, offset) {
      file = next;
      done = offset;
      resumedFrom = offset;
      draw(true);
    },
    advance(bytes) {
      done += bytes;
      draw(false);
    },
    done(outcome) {
      if (!file) return;
      if (stream) {
        draw(true);
        stream.write(outcome === 'cached' ? ' (cached)\n' : '\n');
      } else if (outcome === 'cached') log(`${repo}: ${file.path} (${formatBytes(file.size)}) already in the cache`);
      else log(`${repo}: fetched ${file.path} (${formatBytes(file.size)}${resumedFrom > 0 ? `, resumed at ${formatBytes(resumedFrom)}` : ''})`);
      file = undefined;
    },
  };
}
