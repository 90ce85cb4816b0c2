import { describe, expect, it } from 'vitest';
import { Progress, formatDuration } from '../../../bench/harness/progress.js';

function sink(isTTY: boolean): { write(text: string): void; isTTY: boolean; text: string } {
  return {
    isTTY,
    text: '',
    write(text: string) {
      this.text += text;
    },
  };
}

describe('Progress', () => {
  it('writes only occasional lines when not on a terminal', () => {
    const stream = sink(false);
    let clock = 0;
    const progress = new Progress('forward', { stream, now: () => clock, logIntervalMs: 10_000 });
    for (let done = 0; done < 100; done++) {
      clock = done * 1000; // one second per run: a line at most every 10 runs
      progress.update({ label: `case ${done}`, done, total: 100, etaMs: (100 - done) * 1000 });
    }
    progress.update({ label: 'done', done: 100, total: 100, etaMs: 0 });
    progress.finish();
    const lines = stream.text.trimEnd().split('\n');
    expect(lines.length).toBe(11);
    expect(lines[0]).toBe('[forward] 0/100 case 0 · elapsed 0ms · ETA 1m40s');
    expect(lines[1]).toBe('[forward] 10/100 case 10 · elapsed 10.0s · ETA 1m30s');
    expect(lines.at(-1)).toBe('[forward] 100/100 done · elapsed 1m39s');
    expect(stream.text).not.toContain('\r');
  });

  it('redraws one line in place on a terminal and ends it before a log message', () => {
    const stream = sink(true);
    let clock = 0;
    const progress = new Progress('forward', { stream, now: () => clock });
    progress.update({ label: 'a', done: 0, total: 2, etaMs: undefined });
    clock = 500;
    progress.update({ label: 'b', done: 1, total: 2, etaMs: 500 });
    progress.log('skipped something');
    expect(stream.text).toBe('\r\x1b[K[forward] 0/2 a · elapsed 0ms · ETA ?\r\x1b[K[forward] 1/2 b · elapsed 500ms · ETA 500ms\nskipped something\n');
  });

  it('formats durations compactly', () => {
    expect([formatDuration(850), formatDuration(12_340), formatDuration(59_960), formatDuration(245_000)]).toEqual(['850ms', '12.3s', '1m00s', '4m05s']);
  });
});
