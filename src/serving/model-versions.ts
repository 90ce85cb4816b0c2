// A model's versions as the model manager holds them, and how routing and the repository index
// read them (pure): a version's effective state (a loaded one is only as ready as its supervised
// workers), which version a request goes to, the repository index, and the error a failed load gives.

import type { ModelState, RepositoryIndexEntry } from '../contracts/inference-service.js';
import { ConveyorError, notFound, unavailable } from '../errors.js';
import { totalBytes, type VersionBytes } from './memory-budget.js';
import type { ServedModel } from './served-model.js';

export interface VersionEntry {
  state: ModelState;
  reason: string;
  served?: ServedModel;
  /** Why it failed to load, when it did. */
  error?: ConveyorError;
  /** Its share of --memory-budget-bytes while loaded (estimated before the load). */
  bytes?: VersionBytes;
}

/** A loaded version is only as ready as its supervised workers are at this instant. */
export function effectiveState(v: VersionEntry): ModelState {
  if (v.state !== 'READY') return v.state;
  return v.served?.supervision?.().state ?? 'READY';
}

/** ": <reason>" for a version that is not READY because of its workers, else ''. */
function why(v: VersionEntry): string {
  const status = v.state === 'READY' ? v.served?.supervision?.() : undefined;
  return status && !status.ready ? `: ${status.reason}` : '';
}

/** Of a known model's versions, the one a request goes to: `version` if usable, else the highest usable one. */
export function pickVersion(name: string, versions: ReadonlyMap<number, VersionEntry>, version: string | undefined, usable: (v: VersionEntry) => boolean): ServedModel {
  if (version) {
    const wanted = versions.get(Number(version));
    if (!/^[1-9][0-9]*$/.test(version) || !wanted) throw notFound(`Request for unknown model: '${name}' version ${version} is not found`);
    if (!usable(wanted) || !wanted.served) throw unavailable(`Request for unknown model: '${name}' version ${version} is not at ready state${why(wanted)}`);
    return wanted.served;
  }
  const ready = [...versions.entries()].filter(([, v]) => usable(v) && v.served).sort((a, b) => b[0] - a[0]);
  if (ready.length === 0) {
    const reasons = [...versions.values()].map(why).filter((r) => r !== '');
    throw unavailable(`Request for unknown model: '${name}' has no available versions${reasons[0] ?? ''}`);
  }
  return ready[0]![1].served!;
}

/** What the index and readiness read of a model: a load-level failure, and its versions. */
export interface ModelVersions {
  readonly error?: string;
  readonly versions: ReadonlyMap<number, VersionEntry>;
}

/**
 * The repository index over `names` (sorted): a model with versions has a row per version in
 * version order, one without a single UNAVAILABLE row with its reason; `readyOnly` keeps the READY rows.
 */
export function repositoryIndex(names: readonly string[], models: ReadonlyMap<string, ModelVersions>, readyOnly: boolean): RepositoryIndexEntry[] {
  const rows: RepositoryIndexEntry[] = [];
  for (const name of names) {
    const entry = models.get(name);
    if (!entry || entry.versions.size === 0) {
      if (!readyOnly) rows.push({ name, version: '', state: 'UNAVAILABLE', reason: entry?.error ?? 'unloaded' });
      continue;
    }
    for (const [version, v] of [...entry.versions.entries()].sort((a, b) => a[0] - b[0])) {
      const state = effectiveState(v);
      const reason = v.state === 'READY' ? (v.served?.supervision?.().reason ?? v.reason) : v.reason;
      const precision = v.served ? { precision: v.served.variant.precision } : {};
      if (!readyOnly || state === 'READY') rows.push({ name, version: String(version), state, reason, ...precision });
    }
  }
  return rows;
}

/** The memory accounting's total: every loaded version's weights and KV pool (the old variant too, mid-swap). */
export function loadedBytes(models: Iterable<ModelVersions>): number {
  let sum = 0;
  for (const entry of models) for (const v of entry.versions.values()) if (v.served && v.bytes) sum += totalBytes(v.bytes);
  return sum;
}

/** INVALID_ARG when every failure was the request's or config's fault (a path that leaves its directory), else UNAVAILABLE. */
export function loadFailure(name: string, failed: readonly VersionEntry[]): ConveyorError {
  const code = failed.every((v) => v.error?.code === 'INVALID_ARG') ? 'INVALID_ARG' : 'UNAVAILABLE';
  return new ConveyorError(code, `failed to load '${name}': ${failed.map((v) => v.reason).join('; ')}`);
}
