// Tests wait for the event or state they mean (vi.waitFor, expect.poll, a stream chunk, an event), never for
// a fixed time: a sleep that is long enough on an idle machine is too short on a loaded one. Timers a test
// drives itself (vi.useFakeTimers, an injected clock) and intervals that are the behaviour under test
// (a trickling client, an event-loop lag probe) are not sleeps and are not matched.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const SELF = relative(ROOT, import.meta.filename);

/** Each form of "wait a fixed time", with what to do instead. */
const SLEEPS: readonly { readonly pattern: RegExp; readonly instead: string }[] = [
  // new Promise((r) => setTimeout(r, 100)), new Promise<void>((resolve) => setTimeout(resolve, ms))
  { pattern: /new Promise\s*(?:<[^>]*>)?\s*\(\s*\(?\s*(\w+)\s*\)?\s*=>\s*setTimeout\(\s*\1\s*,/, instead: 'wait on the state with vi.waitFor or expect.poll' },
  { pattern: /['"](?:node:)?timers\/promises['"]/, instead: 'wait on the event, not a timer promise' },
  { pattern: /promisify\(\s*setTimeout\s*\)/, instead: 'wait on the event, not a timer promise' },
  { pattern: /\b(?:sleep|delay)\s*\(\s*\d/, instead: 'wait on the state with vi.waitFor or expect.poll' },
];

/** `line: text (instead)` for each fixed sleep in a source text. */
function fixedSleeps(source: string): string[] {
  return source.split('\n').flatMap((text, i) => SLEEPS.filter((s) => s.pattern.test(text)).map((s) => `${i + 1}: ${text.trim()} (${s.instead})`));
}

function testFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(join(ROOT, path)).isDirectory()) return testFiles(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

describe('no fixed sleeps in tests', () => {
  const files = testFiles('test').filter((f) => f !== SELF);

  it('finds the test files', () => {
    expect(files).toContain(join('test', 'unit', 'architecture', 'import-boundaries.test.ts'));
  });

  it('no test file waits a fixed time', () => {
    const found = files.flatMap((file) => fixedSleeps(readFileSync(join(ROOT, file), 'utf8')).map((hit) => `${file}:${hit}`));
    expect(found).toEqual([]);
  });

  it('flags each form of a fixed sleep', () => {
    for (const sleep of [
      'await new Promise((r) => setTimeout(r, 50));',
      'await new Promise<void>((resolve) => setTimeout(resolve, ms));',
      'await new Promise(r => setTimeout(r, 10));',
      "import { setTimeout as wait } from 'node:timers/promises';",
      'const wait = promisify(setTimeout);',
      'await sleep(100);',
    ]) {
      expect(fixedSleeps(sleep), sleep).toHaveLength(1);
    }
  });

  it('leaves timers that are not sleeps alone', () => {
    for (const timer of [
      'const timer = setInterval(() => ticks++, 5);',
      'setTimeout(resolve, 200);',
      'vi.advanceTimersByTime(900);',
      'const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));',
      'const timer = setTimeout(() => controller.abort(), 5_000);',
      'max_queue_delay_microseconds: 3000000',
    ]) {
      expect(fixedSleeps(timer), timer).toEqual([]);
    }
  });
});
