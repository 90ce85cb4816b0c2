import { describe, expect, it } from 'vitest';
import { concurrencyList, goodput, promptsAt, serveConfig } from '../../../bench/scenarios/serve/config.js';

describe('serve flags', () => {
  it('defaults: bench decoder, 1/8/32, 128 in and 64 out; --quick: tiny, 1/4, 16 in and 8 out', () => {
    expect(serveConfig({}, false)).toMatchObject({ size: 'bench', concurrency: [1, 8, 32], inputLen: 128, outputLen: 64, requestRate: Infinity, burstiness: 1, dataset: 'random', prefixLen: 0 });
    expect(serveConfig({}, true)).toMatchObject({ size: 'tiny', concurrency: [1, 4], inputLen: 16, outputLen: 8 });
    expect(serveConfig({ dataset: 'shared-prefix' }, false).prefixLen).toBe(256);
  });

  it('parses rates, caps and the base URL', () => {
    const config = serveConfig({ 'request-rate': '2.5', 'max-concurrency': '4,inf', 'base-url': 'http://h:1/', burstiness: '0.5' }, false);
    expect(config).toMatchObject({ requestRate: 2.5, concurrency: [4, Infinity], baseUrl: 'http://h:1', burstiness: 0.5 });
    expect(serveConfig({ 'request-rate': 'inf' }, false).requestRate).toBe(Infinity);
    expect(() => serveConfig({ 'request-rate': '0' }, false)).toThrow(/--request-rate/);
    expect(() => serveConfig({ 'range-ratio': '1' }, false)).toThrow(/--range-ratio/);
    expect(() => serveConfig({ systems: 'conveyor,vllm' }, false)).toThrow(/'vllm' is not one of/);
    expect(() => concurrencyList('0', [])).toThrow(/--max-concurrency/);
  });

  it('reads --goodput as vLLM writes it, with spaces or commas', () => {
    expect(goodput('ttft:500 tpot:50 e2el:3000')).toEqual({ ttftMs: 500, tpotMs: 50, e2elMs: 3000 });
    expect(goodput('tpot:20,ttft:100')).toEqual({ tpotMs: 20, ttftMs: 100 });
    expect(goodput(undefined)).toBeUndefined();
    expect(() => goodput('latency:5')).toThrow(/not ttft:ms/);
  });

  it('sends twice the cap per point unless --num-prompts says otherwise, once for all or per point', () => {
    expect(promptsAt({ numPrompts: undefined, quick: false }, 32, 2)).toBe(64);
    expect(promptsAt({ numPrompts: undefined, quick: false }, 1, 0)).toBe(8);
    expect(promptsAt({ numPrompts: undefined, quick: true }, 1, 0)).toBe(2);
    expect(promptsAt({ numPrompts: [5], quick: false }, 32, 2)).toBe(5);
    const perPoint = serveConfig({ 'num-prompts': '4,16,32' }, false);
    expect([1, 8, 32].map((c, i) => promptsAt(perPoint, c, i))).toEqual([4, 16, 32]);
    expect(() => serveConfig({ 'num-prompts': '4,16' }, false)).toThrow(/2 counts for 3 concurrency points/);
  });
});
