// Triton's response cache flags, declared once: the option parser, USAGE and the server options
// read this file. `--cache-config <cache>,<key>=<value>` (repeatable, keys of one cache merge) and
// the older `--response-cache-byte-size N` (the local cache of N bytes) configure one server-wide
// cache; a model uses it only when its config.pbtxt has `response_cache { enable: true }`.

/** The cache implementations this server has (Triton ships `local` and `redis`; only `local` here). */
export const CACHE_IMPLEMENTATIONS = ['local'] as const;

/** The server's response cache: Triton's `local` cache, an LRU bounded by `sizeBytes` of stored responses. */
export interface ResponseCacheConfig {
  readonly implementation: (typeof CACHE_IMPLEMENTATIONS)[number];
  readonly sizeBytes: number;
}

/** parseArgs declarations of the cache flags. */
export const CACHE_CONFIG_ARG_OPTIONS = {
  'cache-config': { type: 'string', multiple: true },
  'response-cache-byte-size': { type: 'string' },
} as const;

export const CACHE_CONFIG_USAGE = `Response cache (Triton's; a model opts in with response_cache { enable: true } in its config.pbtxt):
  --cache-config CACHE,KEY=VALUE  the server-wide response cache: local,size=BYTES (an LRU of stored
                               responses bounded by BYTES; repeatable, keys merge) (default: none, no
                               model caches)
  --response-cache-byte-size N older spelling of --cache-config local,size=N (0 = no cache)`;

/**
 * The cache the flags configure, or undefined for none. `fail` builds the parser's own error type;
 * the messages follow Triton's where it has one (several caches, both spellings at once).
 */
export function readCacheConfig(
  values: { readonly 'cache-config'?: readonly string[]; readonly 'response-cache-byte-size'?: string },
  fail: (message: string) => Error,
): ResponseCacheConfig | undefined {
  const entries = values['cache-config'] ?? [];
  const legacy = values['response-cache-byte-size'];
  if (legacy !== undefined && entries.length > 0) throw fail('incompatible flags --response-cache-byte-size and --cache-config: give only --cache-config');
  if (legacy !== undefined) {
    const size = byteSize(legacy, '--response-cache-byte-size', fail);
    return size === 0 ? undefined : { implementation: 'local', sizeBytes: size };
  }
  if (entries.length === 0) return undefined;
  const settings = new Map<string, Map<string, string>>();
  for (const entry of entries) {
    const [cache = '', ...pairs] = entry.split(',');
    if (!(CACHE_IMPLEMENTATIONS as readonly string[]).includes(cache)) {
      throw fail(`--cache-config '${entry}': cache '${cache}' is not available (this server has: ${CACHE_IMPLEMENTATIONS.join(', ')}); the form is local,size=BYTES`);
    }
    const keys = settings.get(cache) ?? new Map<string, string>();
    settings.set(cache, keys);
    for (const pair of pairs) {
      const eq = pair.indexOf('=');
      if (eq <= 0) throw fail(`--cache-config '${entry}': '${pair}' is not KEY=VALUE`);
      keys.set(pair.slice(0, eq), pair.slice(eq + 1));
    }
  }
  if (settings.size > 1) throw fail(`multiple cache configurations are not supported (--cache-config names ${[...settings.keys()].join(' and ')})`);
  const [[, keys]] = [...settings.entries()] as [[string, Map<string, string>]];
  for (const key of keys.keys()) if (key !== 'size') throw fail(`--cache-config local: unknown key '${key}' (the local cache takes size=BYTES)`);
  const size = keys.get('size');
  if (size === undefined) throw fail('--cache-config local needs size=BYTES');
  const sizeBytes = byteSize(size, '--cache-config local,size', fail);
  if (sizeBytes === 0) throw fail('--cache-config local,size must be more than 0 bytes (leave the flag out for no cache)');
  return { implementation: 'local', sizeBytes };
}

function byteSize(text: string, flag: string, fail: (message: string) => Error): number {
  const n = Number(text);
  if (text.trim() === '' || !Number.isSafeInteger(n) || n < 0) throw fail(`${flag} must be a whole number of bytes, got '${text}'`);
  return n;
}
