// Counter-based random numbers for the sampler. A draw is a pure function of (request key, output
// position), so a request's tokens depend on nothing else in the batch, survive preemption and
// recompute unchanged, and the sampler keeps no per-request state that would need releasing.

import { randomBytes } from 'node:crypto';

/** A request's stream identity: two 32-bit words derived from its seed (or its id, unseeded). */
export interface StreamKey {
  readonly k0: number;
  readonly k1: number;
}

// A 32-bit avalanche mixer (xorshift-multiply rounds): every input bit flips about half the
// output bits, which is what turns a plain counter into independent-looking draws.
function mix32(x: number): number {
  x ^= x >>> 16;
  x = Math.imul(x, 0x7feb352d);
  x ^= x >>> 15;
  x = Math.imul(x, 0x846ca68b);
  x ^= x >>> 16;
  return x >>> 0;
}

const GOLDEN = 0x9e3779b9;
const TWO_POW_32 = 4294967296;

/** Key for a seeded request: the same seed always gives the same stream, in any process. */
export function seededKey(seed: number): StreamKey {
  // Split the (safe-integer, possibly negative) seed into two's-complement halves.
  const lo = seed >>> 0;
  const hi = Math.floor(seed / TWO_POW_32) >>> 0;
  const k0 = mix32(lo ^ mix32(hi + GOLDEN));
  const k1 = mix32(hi ^ mix32(k0 + 0x6a09e667));
  return { k0, k1 };
}

// Unseeded requests still get a stream of their own, but one nobody can predict across processes.
const PROCESS_SALT = randomBytes(4).readUInt32LE(0);

/** Key for an unseeded request: its id hashed with a per-process random salt. */
export function unseededKey(requestId: string, salt: number = PROCESS_SALT): StreamKey {
  // FNV-1a over UTF-16 code units, then mixed: ids are short, so this costs nothing per token.
  let h = 0x811c9dc5 ^ salt;
  for (let i = 0; i < requestId.length; i++) {
    h ^= requestId.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  const k0 = mix32(h >>> 0);
  const k1 = mix32(k0 ^ salt ^ 0xbb67ae85);
  return { k0, k1 };
}

/**
 * A uniform double in [0, 1) with 53 random bits for draw number `counter` of a stream.
 * `counter` is the output position (0 for the first generated token).
 */
export function uniformAt(key: StreamKey, counter: number): number {
  const c = counter >>> 0;
  const a = mix32(key.k0 ^ mix32(c + GOLDEN));
  const b = mix32(key.k1 ^ mix32(a + c));
  return (a * 2097152 + (b >>> 11)) / 9007199254740992;
}

/** An independent stream for a second draw at the same position (the sampler's rare redraw). */
export function redrawKey(key: StreamKey): StreamKey {
  return { k0: mix32(key.k0 ^ 0x3c6ef372), k1: mix32(key.k1 + 0xa54ff53a) };
}

/** A stream of its own for a draft model's proposals at a position (Sampler.propose), apart from the position's draw and the acceptance test's. */
export function draftKey(key: StreamKey): StreamKey {
  return { k0: mix32(key.k0 ^ 0x6a09e667), k1: mix32(key.k1 + 0xbb67ae85) };
}

/** Streams of their own for speculative decoding's acceptance test and residual draw at a position (acceptance.ts), apart from the position's draw. */
export function proposalKeys(key: StreamKey): { readonly accept: StreamKey; readonly residual: StreamKey } {
  return { accept: { k0: mix32(key.k0 ^ 0x510e527f), k1: mix32(key.k1 + 0x9b05688c) }, residual: { k0: mix32(key.k0 ^ 0x1f83d9ab), k1: mix32(key.k1 + 0x5be0cd19) } };
}
