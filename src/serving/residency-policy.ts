// Pure policies of models loaded on demand: how long an idle model stays (Ollama's keep_alive),
// and which idle models make room for one more. No clocks, no I/O: the residency passes both in.

import { KEEP_ALIVE_FORMS, readKeepAlive, type KeepAliveMs } from '../config/keep-alive.js';
import { invalidArg } from '../errors.js';

export { FOREVER, type KeepAliveMs } from '../config/keep-alive.js';

/** Ollama's keep_alive (src/config/keep-alive.ts); anything else is INVALID_ARG naming `param`. */
export function parseKeepAlive(value: unknown, param: string): KeepAliveMs {
  const ms = readKeepAlive(value);
  if (ms === undefined) throw invalidArg(`${param} must be ${KEEP_ALIVE_FORMS}, got ${JSON.stringify(value)}`, param);
  return ms;
}

/** The keep_alive in force: the request's, else the model's (config.pbtxt), else the server's. */
export function effectiveKeepAlive(request: KeepAliveMs | undefined, model: KeepAliveMs | undefined, server: KeepAliveMs): KeepAliveMs {
  return request ?? model ?? server;
}

export interface ResidentModel {
  readonly name: string;
  /** Estimated resident bytes (weights files plus the KV budget). */
  readonly bytes: number;
  readonly lastUsedMs: number;
  /** Requests it is serving now; a busy model is never evicted. */
  readonly inFlight: number;
}

export interface ResidencyLimits {
  /** Most models loaded at once; 0 = no limit. */
  readonly maxModels: number;
  /** Most estimated bytes loaded at once; 0 = no limit. */
  readonly maxBytes: number;
}

export type EvictionPlan = { readonly evict: readonly string[] } | { readonly refuse: string };

/**
 * What must be unloaded so that a model of `incomingBytes` fits beside `loaded`: the least recently
 * used idle models first, as few as needed. Refused (nothing is unloaded) when even evicting every
 * idle model would not make room, or the model alone exceeds the memory limit.
 */
export function planEvictions(loaded: readonly ResidentModel[], incomingBytes: number, limits: ResidencyLimits): EvictionPlan {
  if (limits.maxBytes > 0 && incomingBytes > limits.maxBytes) {
    return { refuse: `it needs about ${mib(incomingBytes)} and the limit on loaded models' memory is ${mib(limits.maxBytes)}` };
  }
  const fits = (models: readonly ResidentModel[]): boolean =>
    (limits.maxModels === 0 || models.length + 1 <= limits.maxModels) && (limits.maxBytes === 0 || total(models) + incomingBytes <= limits.maxBytes);
  let kept = [...loaded];
  const evict: string[] = [];
  const idleOldestFirst = loaded.filter((m) => m.inFlight === 0).sort((a, b) => a.lastUsedMs - b.lastUsedMs || a.name.localeCompare(b.name));
  for (const victim of idleOldestFirst) {
    if (fits(kept)) break;
    kept = kept.filter((m) => m !== victim);
    evict.push(victim.name);
  }
  if (fits(kept)) return { evict };
  const busy = loaded.filter((m) => m.inFlight > 0).map((m) => m.name);
  return { refuse: `${loaded.length} model(s) are loaded (${mib(total(loaded))}) and the ones that would have to go are serving requests (${busy.join(', ')})` };
}

const total = (models: readonly ResidentModel[]): number => models.reduce((sum, m) => sum + m.bytes, 0);
const mib = (bytes: number): string => `${(bytes / 2 ** 20).toFixed(1)} MiB`;
