// Triton's response cache flags as `conveyor serve` reads them: --cache-config in both of
// Triton's spellings, keys merging over repeats, the older --response-cache-byte-size, and
// Triton's refusals (several caches, both flags at once) plus clear ones for what this server lacks.
import { describe, expect, it } from 'vitest';
import { OptionsError, parseServerOptions, USAGE } from '../../../src/config/server-options.js';

const cacheOf = (...args: string[]) => parseServerOptions(args).responseCache;
const refusal = (...args: string[]) => {
  try {
    parseServerOptions(args);
  } catch (error) {
    expect(error).toBeInstanceOf(OptionsError);
    return (error as Error).message;
  }
  throw new Error(`accepted ${args.join(' ')}`);
};

describe('--cache-config', () => {
  it('is off unless configured', () => {
    expect(cacheOf()).toBeUndefined();
  });

  it("reads Triton's local cache in both spellings", () => {
    expect(cacheOf('--cache-config=local,size=1048576')).toEqual({ implementation: 'local', sizeBytes: 1048576 });
    expect(cacheOf('--cache-config', 'local,size=4096')).toEqual({ implementation: 'local', sizeBytes: 4096 });
  });

  it('merges the keys of repeated flags for one cache, the last value winning', () => {
    expect(cacheOf('--cache-config', 'local,size=1', '--cache-config', 'local,size=2048')).toEqual({ implementation: 'local', sizeBytes: 2048 });
  });

  it('reads the older --response-cache-byte-size as the local cache, 0 as none', () => {
    expect(cacheOf('--response-cache-byte-size', '8192')).toEqual({ implementation: 'local', sizeBytes: 8192 });
    expect(cacheOf('--response-cache-byte-size', '0')).toBeUndefined();
  });

  it("refuses what Triton refuses, in Triton's words", () => {
    expect(refusal('--cache-config', 'local,size=8192', '--response-cache-byte-size', '12345')).toMatch(/^incompatible flags/);
  });

  it('refuses what this server does not have, or a size that is not one', () => {
    expect(refusal('--cache-config', 'redis,host=localhost')).toContain("cache 'redis' is not available (this server has: local)");
    expect(refusal('--cache-config', 'local')).toBe('--cache-config local needs size=BYTES');
    expect(refusal('--cache-config', 'local,size=1k')).toBe("--cache-config local,size must be a whole number of bytes, got '1k'");
    expect(refusal('--cache-config', 'local,size=0')).toMatch(/must be more than 0 bytes/);
    expect(refusal('--cache-config', 'local,size=10,shards=2')).toBe("--cache-config local: unknown key 'shards' (the local cache takes size=BYTES)");
    expect(refusal('--cache-config', 'local,size')).toBe("--cache-config 'local,size': 'size' is not KEY=VALUE");
    expect(refusal('--response-cache-byte-size=-1')).toMatch(/whole number of bytes/);
  });

  it('is listed in --help', () => {
    expect(USAGE).toMatch(/^ {2}--cache-config CACHE,KEY=VALUE +\S/m);
    expect(USAGE).toMatch(/^ {2}--response-cache-byte-size N +\S/m);
  });
});
