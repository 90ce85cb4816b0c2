import { describe, expect, it } from 'vitest';
import { StopStringMatcher } from '../../../src/engine-client/stop-strings.js';

/** Feeds `deltas` and returns the released text, the stop that matched, and what a final flush adds. */
function run(stops: string[], deltas: string[], include = false): { text: string; stopped: string | null; released: string[] } {
  const matcher = new StopStringMatcher(stops, include);
  const released: string[] = [];
  let stopped: string | null = null;
  for (const delta of deltas) {
    const out = matcher.push(delta);
    released.push(out.text);
    if (out.stopped) {
      stopped = out.stopped;
      break;
    }
  }
  if (!stopped) released.push(matcher.flush());
  return { text: released.join(''), stopped, released };
}

/** Every way of cutting `text` into consecutive non-empty pieces. */
function splits(text: string): string[][] {
  if (text.length <= 1) return [[text]];
  const out: string[][] = [];
  for (const rest of splits(text.slice(1))) {
    out.push([text[0]!, ...rest]);
    out.push([text[0]! + rest[0]!, ...rest.slice(1)]);
  }
  return out;
}

describe('StopStringMatcher', () => {
  it('stops on a string split across deltas and never emits it', () => {
    const r = run(['STOP'], ['Hel', 'lo ST', 'OP and more']);
    expect(r).toEqual({ text: 'Hello ', stopped: 'STOP', released: ['Hel', 'lo ', ''] });
  });

  it('holds back text only while it could still start a stop string', () => {
    const matcher = new StopStringMatcher(['STOP']);
    expect(matcher.push('abc S')).toEqual({ text: 'abc ', stopped: null });
    expect(matcher.push('T')).toEqual({ text: '', stopped: null });
    expect(matcher.push('x')).toEqual({ text: 'STx', stopped: null });
    expect(matcher.push('SS')).toEqual({ text: 'S', stopped: null });
    expect(matcher.push('TOP!')).toEqual({ text: '', stopped: 'STOP' });
    expect(matcher.stopped).toBe(true);
    expect(matcher.push('later')).toEqual({ text: '', stopped: null });
  });

  it('releases held text when generation ends for another reason', () => {
    expect(run(['</answer>'], ['42 </ans'])).toEqual({ text: '42 </ans', stopped: null, released: ['42 ', '</ans'] });
  });

  it('with include_stop_str_in_output emits through the stop string and holds nothing back', () => {
    expect(run(['STOP'], ['Hel', 'lo ST', 'OP and more'], true)).toEqual({ text: 'Hello STOP', stopped: 'STOP', released: ['Hel', 'lo ST', 'OP'] });
    expect(run(['\n\n'], ['a\n', '\nb'], true).text).toBe('a\n\n');
  });

  it('picks the stop that ends first, the same for every way the text is cut', () => {
    const stops = ['xyz', 'y', 'zc'];
    for (const pieces of splits('abxyzc')) {
      expect(run(stops, pieces)).toMatchObject({ text: 'abx', stopped: 'y' });
      expect(run(stops, pieces, true)).toMatchObject({ text: 'abxy', stopped: 'y' });
    }
    for (const pieces of splits('aabab')) expect(run(['abab', 'ba'], pieces)).toMatchObject({ text: 'aa', stopped: 'ba' });
    // Same end: the longer (earlier-starting) one.
    expect(run(['bc', 'abc'], ['xab', 'cd'])).toMatchObject({ text: 'x', stopped: 'abc' });
  });

  it('handles a stop string at the very start and multi-character overlaps', () => {
    expect(run(['<|'], ['<|im_end|>'])).toMatchObject({ text: '', stopped: '<|' });
    for (const pieces of splits('aaab')) expect(run(['aab'], pieces)).toMatchObject({ text: 'a', stopped: 'aab' });
  });

  it('matches non-ASCII stop strings', () => {
    expect(run(['。', '🛑'], ['你好', '世界。再见'])).toMatchObject({ text: '你好世界', stopped: '。' });
    expect(run(['🛑'], ['go ', '🛑', ' no'])).toMatchObject({ text: 'go ', stopped: '🛑' });
  });

  it('passes text straight through without stop strings', () => {
    expect(run([], ['a', '', 'b'])).toEqual({ text: 'ab', stopped: null, released: ['a', '', 'b', ''] });
  });

  it('agrees with a whole-text search on random small alphabets, split anywhere', () => {
    let seed = 7;
    const rand = (n: number) => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed % n;
    };
    const word = (max: number) => Array.from({ length: 1 + rand(max) }, () => 'ab'[rand(2)]).join('');
    for (let t = 0; t < 3000; t++) {
      const stops = Array.from({ length: 1 + rand(4) }, () => word(6));
      const deltas = Array.from({ length: 1 + rand(8) }, () => (rand(10) === 0 ? '' : word(4)));
      const whole = deltas.join('');
      // The first end position where some stop string ends (ties: the longer).
      let expected: { text: string; stopped: string | null } = { text: whole, stopped: null };
      for (let end = 1; end <= whole.length && expected.stopped === null; end++) {
        const hit = stops.filter((s) => whole.slice(0, end).endsWith(s)).sort((a, b) => b.length - a.length)[0];
        if (hit !== undefined) expected = { text: whole.slice(0, end - hit.length), stopped: hit };
      }
      expect(run(stops, deltas)).toMatchObject(expected);
      const inclusive = expected.stopped === null ? expected : { text: `${expected.text}${expected.stopped}`, stopped: expected.stopped };
      expect(run(stops, deltas, true)).toMatchObject(inclusive);
    }
  });

  it('holds and releases text against 32 × 1 MB stop strings', () => {
    const stops: string[] = JSON.parse(JSON.stringify(Array.from({ length: 32 }, (_, i) => `${'a'.repeat(1024 * 1024 - 8)}${String(i).padStart(8, 'x')}`)));
    const matcher = new StopStringMatcher(stops);
    let released = '';
    for (let i = 0; i < 2000; i++) released += matcher.push(i % 100 === 99 ? 'b' : 'aaaa').text;
    // Every 'b' releases the run of a's before it: no stop string matched, nothing lost.
    expect(matcher.stopped).toBe(false);
    expect(released + matcher.flush()).toBe(Array.from({ length: 2000 }, (_, i) => (i % 100 === 99 ? 'b' : 'aaaa')).join(''));
  });
});
