// The pure policies behind models on demand: keep_alive durations and which idle models make room.
import { describe, expect, it } from 'vitest';
import { FOREVER, effectiveKeepAlive, parseKeepAlive, planEvictions, type ResidentModel } from '../../../src/serving/residency-policy.js';
import { ConveyorError } from '../../../src/errors.js';

const model = (name: string, lastUsedMs: number, inFlight = 0, bytes = 100): ResidentModel => ({ name, lastUsedMs, inFlight, bytes });

describe('keep_alive (Ollama durations)', () => {
  it.each([
    ['5m', 300_000],
    ['30s', 30_000],
    ['1h30m', 5_400_000],
    ['250ms', 250],
    ['0', 0],
    [0, 0],
    [2.5, 2500],
    ['90', 90_000],
    [-1, FOREVER],
    ['-1', FOREVER],
    ['-5m', FOREVER],
  ])('%j → %d ms', (value, ms) => {
    expect(parseKeepAlive(value, 'keep_alive')).toBe(ms);
  });

  it.each([['5 minutes'], ['m'], [''], ['5m3'], [true], [{}], [Number.NaN], ['1d']])('refuses %j naming the field', (value) => {
    try {
      parseKeepAlive(value, 'keep_alive');
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ConveyorError);
      expect((error as ConveyorError).code).toBe('INVALID_ARG');
      expect((error as ConveyorError).param).toBe('keep_alive');
      expect((error as Error).message).toMatch(/keep_alive must be a duration/);
    }
  });

  it('the request overrides the model, which overrides the server', () => {
    expect(effectiveKeepAlive(1, 2, 3)).toBe(1);
    expect(effectiveKeepAlive(undefined, 2, 3)).toBe(2);
    expect(effectiveKeepAlive(undefined, undefined, 3)).toBe(3);
    expect(effectiveKeepAlive(0, 2, 3)).toBe(0);
  });
});

describe('planEvictions', () => {
  it('evicts nothing while the new model fits', () => {
    expect(planEvictions([model('a', 1)], 100, { maxModels: 2, maxBytes: 0 })).toEqual({ evict: [] });
    expect(planEvictions([model('a', 1)], 100, { maxModels: 0, maxBytes: 0 })).toEqual({ evict: [] });
  });

  it('evicts the least recently used idle model first, never a busy one', () => {
    const loaded = [model('new', 30), model('old-busy', 10, 2), model('older-idle', 20)];
    expect(planEvictions(loaded, 100, { maxModels: 3, maxBytes: 0 })).toEqual({ evict: ['older-idle'] });
    expect(planEvictions([model('b', 20), model('a', 10)], 100, { maxModels: 2, maxBytes: 0 })).toEqual({ evict: ['a'] });
  });

  it('evicts as many as the memory limit needs, oldest first', () => {
    const loaded = [model('a', 10, 0, 300), model('b', 20, 0, 300), model('c', 30, 0, 300)];
    expect(planEvictions(loaded, 500, { maxModels: 0, maxBytes: 1000 })).toEqual({ evict: ['a', 'b'] });
  });

  it('refuses, evicting nothing, when only busy models could make room', () => {
    const plan = planEvictions([model('a', 10, 1), model('b', 20, 0)], 100, { maxModels: 1, maxBytes: 0 });
    expect(plan).toEqual({ refuse: expect.stringMatching(/serving requests \(a\)/) });
  });

  it('refuses a model larger than the whole memory limit', () => {
    expect(planEvictions([], 2 ** 21, { maxModels: 0, maxBytes: 2 ** 20 })).toEqual({ refuse: expect.stringMatching(/needs about 2\.0 MiB.*1\.0 MiB/) });
  });
});
