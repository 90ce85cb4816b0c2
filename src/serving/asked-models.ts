// The models the server was asked to serve at startup (--model, --load-model, the whole
// repository in none and poll modes), and Triton's strict readiness over them. One unloaded on
// purpose (the repository API, sleep, idle unload, eviction, gone from a polled repository) is no
// longer asked for; one whose load failed, or that the repository does not hold, keeps the
// server not ready, and keeps its index row saying why.

import { effectiveState, type ModelVersions } from './model-versions.js';

export class AskedModels {
  private readonly names = new Set<string>();

  /** Asked for at startup (a repository name). */
  add(name: string): void {
    this.names.add(name);
  }

  /** Unloaded on purpose: no longer asked for. */
  release(name: string): void {
    this.names.delete(name);
  }

  has(name: string): boolean {
    return this.names.has(name);
  }

  [Symbol.iterator](): IterableIterator<string> {
    return this.names.values();
  }
}

/** Triton's strict readiness: no model failed to load, every loaded version is READY, and every model asked for has versions. */
export function strictlyReady(models: ReadonlyMap<string, ModelVersions>, asked: AskedModels): boolean {
  const healthy = [...models.values()].every((e) => !e.error && [...e.versions.values()].every((v) => effectiveState(v) === 'READY'));
  return healthy && [...asked].every((name) => (models.get(name)?.versions.size ?? 0) > 0);
}
