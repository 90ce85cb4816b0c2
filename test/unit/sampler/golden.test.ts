// Bit-identity of the sampler against outputs recorded before its restructuring (issue 10): the
// same token for the same seed and inputs, and the same logprobs, on every path of the draw.
import { describe, expect, it } from 'vitest';
import { runGoldenCases } from './golden-cases.js';
import * as expected from './golden-expected.js';

const actual = runGoldenCases();

describe('sampler golden outputs', () => {
  it.each(Object.keys(expected.big))('Qwen3-sized row, %s', (name) => {
    expect(actual.big[name]).toEqual(expected.big[name as keyof typeof expected.big]);
  });

  it.each(Object.keys(expected.small))('small row, %s', (name) => {
    expect(actual.small[name]).toEqual(expected.small[name as keyof typeof expected.small]);
  });

  it.each(Object.keys(expected.tail))('head-and-tail draw with a 1-nat head, %s', (name) => {
    expect(actual.tail[name]).toEqual(expected.tail[name as keyof typeof expected.tail]);
  });

  it('covers every recorded case and no other', () => {
    expect(Object.keys(actual.big)).toEqual(Object.keys(expected.big));
    expect(Object.keys(actual.small)).toEqual(Object.keys(expected.small));
    expect(Object.keys(actual.tail)).toEqual(Object.keys(expected.tail));
  });

  it('sampleStep over a batch, and the counter-based stream', () => {
    expect(actual.step).toEqual(expected.step);
    expect(actual.rng).toEqual(expected.rng);
  });
});
