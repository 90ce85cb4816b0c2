import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildDataset, countTokens, lengthRange, loadPromptTokenizer, type DatasetSpec, type PromptTokenizer } from '../../../bench/scenarios/serve/dataset.js';
import { DEFAULT_REPOSITORY } from '../../../models/default-repository.js';

/**
 * One token per character, but ids from 500 up decode to two characters: a decoded prompt
 * re-tokenizes longer than the ids it came from, so the length has to be corrected, as with the
 * seams of real BPE. With `special`, a BOS id is added in front, as some tokenizers do.
 */
const BOS = 999;
const twoForEven: PromptTokenizer = {
  encode: (text, special) => [...(special ? [BOS] : []), ...[...text].map((c) => c.charCodeAt(0) - 97)],
  decode: (ids) => ids.map((id) => String.fromCharCode(97 + (id % 26)).repeat(id >= 500 ? 2 : 1)).join(''),
  ordinaryVocab: 998,
};
const count = (text: string): number => countTokens(twoForEven, text);

const SPEC: DatasetSpec = { kind: 'random', numPrompts: 20, inputLen: 40, outputLen: 10, rangeRatio: 0, prefixLen: 0, numPrefixes: 1, seed: 1 };

describe('buildDataset', () => {
  it('corrects every prompt to exactly its drawn length', () => {
    for (const request of buildDataset(SPEC, twoForEven)) {
      expect(request.promptLen).toBe(40);
      expect(count(request.prompt)).toBe(40);
      expect(request.outputLen).toBe(10);
    }
  });

  it('draws lengths uniformly within the range ratio', () => {
    const requests = buildDataset({ ...SPEC, numPrompts: 200, rangeRatio: 0.5 }, twoForEven);
    const inputs = requests.map((r) => r.promptLen);
    const outputs = requests.map((r) => r.outputLen);
    expect(Math.min(...inputs)).toBeGreaterThanOrEqual(20);
    expect(Math.max(...inputs)).toBeLessThanOrEqual(60);
    expect(Math.min(...outputs)).toBeGreaterThanOrEqual(5);
    expect(Math.max(...outputs)).toBeLessThanOrEqual(15);
    expect(new Set(inputs).size).toBeGreaterThan(20);
    for (const r of requests) expect(count(r.prompt)).toBe(r.promptLen);
  });

  it('is the same for a seed and different for another', () => {
    expect(buildDataset(SPEC, twoForEven)).toEqual(buildDataset(SPEC, twoForEven));
    expect(buildDataset({ ...SPEC, seed: 2 }, twoForEven)[0]!.prompt).not.toBe(buildDataset(SPEC, twoForEven)[0]!.prompt);
  });

  it('shared-prefix: prompts take the prefixes in turn, each prefix + suffix counted exactly', () => {
    const requests = buildDataset({ ...SPEC, kind: 'shared-prefix', numPrompts: 6, prefixLen: 30, numPrefixes: 2, inputLen: 10 }, twoForEven);
    // The BOS is one of the 30 prefix tokens, so the prefix is 29 characters.
    const prefixes = requests.map((r) => r.prompt.slice(0, 29));
    expect(new Set(prefixes).size).toBe(2);
    expect(prefixes[0]).toBe(prefixes[2]);
    expect(prefixes[1]).toBe(prefixes[3]);
    for (const r of requests) expect(r.promptLen).toBe(40);
  });

  it('random with a prefix length shares one prefix among all prompts', () => {
    const requests = buildDataset({ ...SPEC, numPrompts: 4, prefixLen: 12 }, twoForEven);
    expect(new Set(requests.map((r) => r.prompt.slice(0, 11))).size).toBe(1);
  });

  it('falls back to pseudo-words without a tokenizer, one word per token', () => {
    const requests = buildDataset({ ...SPEC, numPrompts: 3 }, null);
    for (const r of requests) expect(r.prompt.split(' ')).toHaveLength(40);
  });

  it('rejects a range ratio outside [0, 1)', () => {
    expect(() => lengthRange(10, 1, 1)).toThrow(/range ratio/);
    expect(lengthRange(10, 0.25, 1)).toEqual([7, 12]);
  });

  it('hits exact lengths with the real Qwen3 tokenizer', { timeout: 60_000 }, async () => {
    const tokenizer = await loadPromptTokenizer(join(DEFAULT_REPOSITORY, 'qwen3-tiny', '1'));
    const requests = buildDataset({ ...SPEC, numPrompts: 8, inputLen: 64 }, tokenizer);
    for (const r of requests) {
      expect(r.promptLen).toBe(64);
      expect(countTokens(tokenizer, r.prompt)).toBe(64);
    }
  });
});
