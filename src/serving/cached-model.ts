// A loaded model version behind the server's response cache. The model manager puts every
// version it loads through withResponseCache, so whatever reaches a model — a KServe HTTP or
// gRPC request, an ensemble step, a TypeScript model's BLS call — reaches it through the cache,
// whatever its backend. A hit answers from the cache without validating, queueing or executing
// anything; a miss runs the model as before and stores its answer.

import type { InferRequest, InferResponse } from '../contracts/infer.js';
import type { ModelConfig } from '../contracts/model-config.js';
import { CacheStatsRecorder } from '../batcher/stats.js';
import type { ResponseCache } from './response-cache.js';
import { ownCopies, requestCacheKey, responseBytes, type CacheKeyScope } from './response-cache-key.js';
import type { ServedModel } from './served-model.js';

/** What an entry holds: the response less the request's own id, which each answer echoes afresh. */
export type StoredResponse = Omit<InferResponse, 'id'>;
export type ServerResponseCache = ResponseCache<StoredResponse>;

/**
 * Why a config may not enable the response cache, or undefined. A decoupled model is refused by
 * config validation (src/repository/config/validate.ts), as Triton refuses it; an LLM's
 * generations stream and sample, so there is no one answer to store either.
 */
export function responseCacheRefusal(config: ModelConfig): string | undefined {
  if (!config.response_cache?.enable || config.backend !== 'llm') return undefined;
  return "response_cache cannot be enabled for backend 'llm': generation streams and samples, so there is no single response to reuse";
}

/** Tells two loads of one version apart, so a reloaded model never answers from its predecessor's entries. */
let loadGeneration = 0;

/**
 * `served` as the server routes to it: through `cache` when its config enables caching. Without a
 * server cache (no --cache-config) caching is off, as in Triton, and the load says so in the log.
 */
export function withResponseCache(served: ServedModel, cache: ServerResponseCache | undefined, log: (line: string) => void): ServedModel {
  if (!served.config.response_cache?.enable) return served;
  if (cache === undefined) {
    log(`${served.name}: version ${served.version} enables response_cache, but the server has no cache (--cache-config local,size=BYTES): its responses are not cached`);
    return served;
  }
  const cached = new CachedInfer(served, cache);
  const overrides: Partial<Record<PropertyKey, unknown>> = {
    infer: cached.infer.bind(cached),
    statistics: cached.statistics.bind(cached),
    close: cached.close.bind(cached),
    responseCacheEnabled: true,
  };
  // Everything else is the model's own (and `instanceof` still sees its class): the backend's
  // methods run on the model itself, so no state of it is ever written to the wrapper.
  return new Proxy(served, {
    get(target, property) {
      if (Object.hasOwn(overrides, property)) return overrides[property];
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

class CachedInfer {
  private readonly stats = new CacheStatsRecorder();
  private readonly scope: CacheKeyScope;
  private closed = false;

  constructor(
    private readonly served: ServedModel,
    private readonly cache: ServerResponseCache,
  ) {
    loadGeneration += 1;
    this.scope = { name: served.name, version: served.version, generation: loadGeneration, outputs: served.config.output.map((o) => o.name) };
  }

  async infer(request: InferRequest, signal?: AbortSignal): Promise<InferResponse> {
    const arrived = performance.now();
    const key = requestCacheKey(this.scope, request);
    const found = this.cache.lookup(key).value;
    if (found !== undefined) {
      const response = { ...found, outputs: ownCopies(found.outputs), ...(request.id ? { id: request.id } : {}) };
      const ns = (performance.now() - arrived) * 1e6;
      // A hit waits in no queue: the lookup happens as the request arrives.
      this.stats.recordHit(ns, 0, ns, Date.now());
      return response;
    }
    const lookupNs = (performance.now() - arrived) * 1e6;
    const response = await this.served.infer(request, signal);
    const inserting = performance.now();
    // An answer that arrives after the unload began is not stored: nothing would drop it.
    if (!this.closed) {
      const { id: _echoed, ...stored } = response;
      this.cache.insert(key, { ...stored, outputs: ownCopies(stored.outputs) }, responseBytes(stored.outputs), this);
      this.stats.recordMiss(lookupNs + (performance.now() - inserting) * 1e6);
    }
    return response;
  }

  statistics() {
    return this.stats.overlay(this.served.statistics());
  }

  /** Unloading (or replacing) the version drops its entries. */
  async close(): Promise<void> {
    this.closed = true;
    this.cache.drop(this);
    try {
      await this.served.close();
    } finally {
      this.cache.drop(this);
    }
  }
}
