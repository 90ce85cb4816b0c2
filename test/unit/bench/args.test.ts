import { describe, expect, it } from 'vitest';
import { intList, parseBenchArgs } from '../../../bench/harness/args.js';
import type { Scenario } from '../../../bench/harness/scenario.js';

const scenario: Scenario = {
  name: 'demo',
  description: 'a demo scenario',
  flags: { size: { type: 'string', usage: '--size S', description: 'model size' } },
  defaults: { full: { reps: 10, warmup: 2 }, quick: { reps: 3, warmup: 1 }, baseline: 'fp32' },
  prepare: () => Promise.reject(new Error('not used')),
};

describe('parseBenchArgs', () => {
  it('takes the scenario defaults, quick ones with --quick', () => {
    const full = parseBenchArgs(['demo'], [scenario]);
    const quick = parseBenchArgs(['demo', '--quick', '--size', 'tiny'], [scenario]);
    expect(full.kind === 'run' && full.common).toEqual({ reps: 10, warmup: 2, quick: false, out: undefined, baseline: 'fp32' });
    expect(quick.kind === 'run' && quick.common).toMatchObject({ reps: 3, warmup: 1, quick: true });
    expect(quick.kind === 'run' && quick.flags).toEqual({ size: 'tiny' });
  });

  it('lets flags override reps, warm-up, output and baseline', () => {
    const parsed = parseBenchArgs(['demo', '--reps', '7', '--warmup', '0', '--out', '/tmp/x', '--baseline', 'int8'], [scenario]);
    expect(parsed.kind === 'run' && parsed.common).toEqual({ reps: 7, warmup: 0, quick: false, out: '/tmp/x', baseline: 'int8' });
  });

  it('lists scenarios and their flags for --help or no scenario', () => {
    for (const argv of [[], ['--help'], ['demo', '-h']]) {
      const parsed = parseBenchArgs(argv, [scenario]);
      expect(parsed.kind).toBe('help');
      expect(parsed.kind === 'help' && parsed.text).toContain('demo');
      expect(parsed.kind === 'help' && parsed.text).toContain('--size S');
    }
  });

  it('reports unknown scenarios and flags, and bad numbers', () => {
    expect(parseBenchArgs(['nope'], [scenario])).toMatchObject({ kind: 'help', error: "unknown scenario 'nope'" });
    expect(parseBenchArgs(['demo', '--bogus'], [scenario])).toMatchObject({ kind: 'help', error: expect.stringContaining('--bogus') });
    expect(() => parseBenchArgs(['demo', '--reps', '0'], [scenario])).toThrow(/--reps/);
    expect(() => intList('1,x', [], '--batches')).toThrow(/--batches/);
    expect(intList('1, 8,32', [], '--batches')).toEqual([1, 8, 32]);
  });
});
