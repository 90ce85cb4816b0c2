// Which models stay loaded, Ollama / llama.cpp-router style: a request naming a repository model
// that is not loaded loads it (concurrent first requests share one load and wait up to the load
// timeout); past the limits on loaded models and their estimated memory, the least recently used
// idle model is unloaded first, never one serving requests; a model idle past its keep_alive is
// unloaded; and vLLM's sleep / wake_up releases and restores an LLM's sessions and KV memory
// while keeping the config it was loaded with. Requests hold a lease for as long as they run.

import { repositoryModelName } from '../contracts/model-names.js';
import { ConveyorError, invalidArg, unavailable } from '../errors.js';
import type { LifecycleObserver, UnloadReason } from '../metrics/index.js';
import { NO_LIFECYCLE_METRICS } from '../metrics/index.js';
import { estimateModelBytes } from './memory-budget.js';
import { listModelNames } from '../repository/scan.js';
import type { ModelConfig } from '../contracts/model-config.js';
import type { ModelManager } from './model-manager.js';
import { effectiveKeepAlive, FOREVER, parseKeepAlive, planEvictions, type KeepAliveMs, type ResidencyLimits } from './residency-policy.js';

export interface ResidencyOptions {
  /** Load a repository model on its first request (--load-on-demand). */
  readonly loadOnDemand: boolean;
  /** How long a request waits for an on-demand load before a 503 (--load-timeout-secs); the load goes on. */
  readonly loadTimeoutSecs: number;
  readonly limits: ResidencyLimits;
  /** The server's keep_alive (--keep-alive): idle time before an on-demand model is unloaded. */
  readonly keepAliveMs: KeepAliveMs;
  readonly observer?: LifecycleObserver;
  readonly log: (line: string) => void;
  readonly now?: () => number;
}

/** A model as /v1/models lists it: serving, coming, unloaded but loadable, or asleep. */
export type ResidencyState = 'READY' | 'LOADING' | 'UNLOADED' | 'SLEEPING';

/** Held by a request while it runs; release() is idempotent. */
export interface ModelLease {
  release(): void;
}

const NO_LEASE: ModelLease = { release: () => undefined };

/** As in vLLM, only /wake_up wakes a sleeping model; its requests are refused meanwhile (503, retryable). */
const sleepingError = (name: string): ConveyorError => unavailable(`model '${name}' is sleeping; POST /wake_up?model=${name} wakes it`);

interface Resident {
  inFlight: number;
  lastUsedMs: number;
  /** The last request's keep_alive, which (as in Ollama) decides how long the model stays after it. */
  requestKeepAliveMs?: KeepAliveMs;
  idleTimer?: NodeJS.Timeout;
  bytes?: number;
  sleeping: boolean;
  /** An idle unload, eviction or sleep in progress: a request arriving meanwhile waits for it, then loads afresh. */
  unloading?: Promise<void>;
}

export class ModelResidency {
  private readonly residents = new Map<string, Resident>();
  /** The on-demand load in progress per model, which every concurrent first request awaits. */
  private readonly loads = new Map<string, Promise<void>>();
  /** Admissions (evict, then load) run one at a time, so two loads never count the same room. */
  private admissions: Promise<void> = Promise.resolve();
  private readonly observer: LifecycleObserver;
  private readonly now: () => number;

  constructor(
    private readonly manager: ModelManager,
    private readonly options: ResidencyOptions,
  ) {
    this.observer = options.observer ?? NO_LIFECYCLE_METRICS;
    this.now = options.now ?? Date.now;
  }

  /**
   * A lease on `name` for one request: loads it first when it is in the repository and not loaded
   * (on demand), and keeps it from idle unload and eviction until released. A name the repository
   * does not hold gets an empty lease: the route answers "unknown model" as before.
   */
  async acquire(id: string, requestKeepAliveMs?: KeepAliveMs): Promise<ModelLease> {
    const name = repositoryModelName(id);
    if (this.residents.get(name)?.sleeping) throw sleepingError(name);
    // Without on-demand loading nothing reads the counts: the request path stays as it was.
    if (!this.options.loadOnDemand || !this.manager.inRepository(name)) return NO_LEASE;
    const resident = this.resident(name);
    resident.inFlight += 1;
    clearTimeout(resident.idleTimer);
    let released = false;
    const lease: ModelLease = {
      release: () => {
        if (released) return;
        released = true;
        this.release(name, resident, requestKeepAliveMs);
      },
    };
    try {
      await resident.unloading;
      if (resident.sleeping) throw sleepingError(name);
      if (!this.isLoaded(name)) await this.waitForLoad(name);
    } catch (error) {
      lease.release();
      throw error;
    }
    return lease;
  }

  state(id: string): ResidencyState {
    const name = repositoryModelName(id);
    if (this.residents.get(name)?.sleeping) return 'SLEEPING';
    if (this.loads.has(name) || this.manager.isChanging(name)) return 'LOADING';
    return this.isLoaded(name) ? 'READY' : 'UNLOADED';
  }

  /** Repository models not loaded now (the ones a request would load on demand, or asleep), with their configs. */
  async unloadedModels(): Promise<{ name: string; state: ResidencyState; config: ModelConfig }[]> {
    if (!this.options.loadOnDemand && ![...this.residents.values()].some((r) => r.sleeping)) return [];
    const loaded = new Set(this.manager.loadedNames());
    const names = (await listModelNames(this.manager.root).catch(() => [])).filter((n) => !loaded.has(n) && this.manager.inRepository(n));
    const listed = await Promise.all(
      names.map(async (name) => {
        const state = this.state(name);
        if (state === 'UNLOADED' && !this.options.loadOnDemand) return undefined;
        const config = await this.manager.repositoryConfig(name).then(
          (r) => r.config,
          () => undefined,
        );
        return config ? { name, state, config } : undefined;
      }),
    );
    return listed.filter((m) => m !== undefined);
  }

  /**
   * vLLM's POST /sleep: new requests are refused (503) from now on, running ones finish, then the
   * sessions and KV memory go; the config stays, so wake_up loads the same model again. vLLM's
   * levels (1: weights offloaded to CPU, 2: discarded) both release everything here: an ONNX
   * session cannot be parked in host memory.
   */
  async sleep(name: string): Promise<void> {
    const resident = this.resident(name);
    if (resident.sleeping) return;
    // The next poll would load it again behind the sleep's back.
    if (this.manager.mode === 'poll') throw invalidArg('sleep is not allowed if polling is enabled (--model-control-mode poll)');
    if (!this.isLoaded(name)) throw invalidArg(`model '${name}' is not loaded, so it cannot be put to sleep`);
    resident.sleeping = true;
    clearTimeout(resident.idleTimer);
    try {
      await this.unloading(resident, this.manager.unload(name));
    } catch (error) {
      resident.sleeping = false;
      throw error;
    }
    this.observer.unloaded(name, 'sleep');
    this.options.log(`${name}: sleeping`);
  }

  /** vLLM's POST /wake_up: loads the sleeping model again with the config it had; awake already, nothing happens. */
  async wakeUp(name: string): Promise<void> {
    const resident = this.residents.get(name);
    if (!resident?.sleeping) return;
    await this.timedLoad(name);
    resident.sleeping = false;
    resident.lastUsedMs = this.now();
    this.options.log(`${name}: awake`);
  }

  isSleeping(name: string): boolean {
    return this.residents.get(name)?.sleeping ?? false;
  }

  /** Runs `load` of `name`, counted in the lifecycle metrics (on-demand loads, wake_up, and the repository API's loads). */
  async observedLoad(name: string, load: () => Promise<void>): Promise<void> {
    const started = performance.now();
    try {
      await load();
    } catch (error) {
      this.observer.loadFailed(name);
      throw error;
    }
    this.observer.loaded(name, (performance.now() - started) / 1000);
  }

  /** An explicit unload (the repository API) counts for the lifecycle metrics too. */
  noteExplicitUnload(name: string): void {
    this.observer.unloaded(name, 'explicit');
  }

  stop(): void {
    for (const resident of this.residents.values()) clearTimeout(resident.idleTimer);
  }

  private isLoaded(name: string): boolean {
    return this.manager.loadedNames().includes(name);
  }

  private resident(name: string): Resident {
    let resident = this.residents.get(name);
    if (!resident) {
      resident = { inFlight: 0, lastUsedMs: this.now(), sleeping: false };
      this.residents.set(name, resident);
    }
    return resident;
  }

  private async waitForLoad(name: string): Promise<void> {
    let load = this.loads.get(name);
    if (!load) {
      const run = this.admissions.then(() => this.admit(name));
      this.admissions = run.catch(() => undefined);
      load = run.finally(() => this.loads.delete(name));
      this.loads.set(name, load);
    }
    const secs = this.options.loadTimeoutSecs;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(unavailable(`model '${name}' is still loading after ${secs} s (--load-timeout-secs); retry shortly`)), secs * 1000);
    });
    try {
      await Promise.race([load, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Makes room (LRU idle models first), then loads; refused with nothing unloaded when room cannot
   * be made. A victim that took a request between the plan and its unload stays, and the plan is made again.
   */
  private async admit(name: string): Promise<void> {
    if (this.isLoaded(name)) return;
    for (let attempt = 0; ; attempt += 1) {
      const victims = await this.planRoom(name);
      let evictedAll = true;
      for (const victim of victims) evictedAll = (await this.unloadIdle(victim, 'evicted')) && evictedAll;
      if (evictedAll || attempt >= 3) break;
    }
    await this.timedLoad(name);
  }

  /** The idle models to unload so that `name` fits; UNAVAILABLE when no choice of idle models makes room. */
  private async planRoom(name: string): Promise<readonly string[]> {
    const incoming = await this.bytesOf(name);
    const loaded = await Promise.all(
      this.manager
        .loadedNames()
        .filter((n) => n !== name)
        .map(async (n) => {
          const r = this.resident(n);
          return { name: n, bytes: await this.bytesOf(n), lastUsedMs: r.lastUsedMs, inFlight: r.inFlight };
        }),
    );
    const plan = planEvictions(loaded, incoming, this.options.limits);
    if ('refuse' in plan) {
      throw new ConveyorError('UNAVAILABLE', `cannot load model '${name}' now: ${plan.refuse} (--max-loaded-models, --max-loaded-model-bytes); retry when one is idle`);
    }
    return plan.evict;
  }

  private async timedLoad(name: string): Promise<void> {
    await this.observedLoad(name, () => this.manager.load(name, this.manager.lastOverride(name)));
    this.resident(name).lastUsedMs = this.now();
  }

  private async bytesOf(name: string): Promise<number> {
    if (this.options.limits.maxBytes === 0) return 0;
    const resident = this.resident(name);
    if (resident.bytes === undefined) {
      const { config, modelDir } = await this.manager.repositoryConfig(name);
      resident.bytes = await estimateModelBytes(modelDir, config, name);
    }
    return resident.bytes;
  }

  private release(name: string, resident: Resident, requestKeepAliveMs: KeepAliveMs | undefined): void {
    resident.inFlight -= 1;
    resident.lastUsedMs = this.now();
    if (requestKeepAliveMs !== undefined) resident.requestKeepAliveMs = requestKeepAliveMs;
    if (resident.inFlight > 0) return;
    const keepAlive = effectiveKeepAlive(resident.requestKeepAliveMs, this.modelKeepAlive(name), this.options.keepAliveMs);
    if (keepAlive === FOREVER) return;
    clearTimeout(resident.idleTimer);
    resident.idleTimer = setTimeout(() => void this.unloadIdle(name, 'idle').catch((e: Error) => this.options.log(`${name}: idle unload failed: ${e.message}`)), keepAlive);
    resident.idleTimer.unref();
  }

  /** The model's own keep_alive parameter (config.pbtxt); a bad one is logged and the server's applies. */
  private modelKeepAlive(name: string): KeepAliveMs | undefined {
    let raw: string | undefined;
    try {
      raw = this.manager.loaded(name).config.parameters.keep_alive?.string_value;
    } catch {
      return undefined;
    }
    if (raw === undefined) return undefined;
    try {
      return parseKeepAlive(raw, 'parameter keep_alive');
    } catch (error) {
      this.options.log(`${name}: ${(error as Error).message}; using the server's --keep-alive`);
      return undefined;
    }
  }

  /** Unloads `name` if it is still idle and awake (a request may have arrived since the decision); false when it stayed. */
  private async unloadIdle(name: string, reason: UnloadReason): Promise<boolean> {
    const resident = this.resident(name);
    if (resident.inFlight > 0 || resident.sleeping || !this.isLoaded(name)) return !this.isLoaded(name);
    await this.unloading(resident, this.manager.unload(name));
    this.observer.unloaded(name, reason);
    this.options.log(`${name}: unloaded (${reason === 'idle' ? 'keep_alive expired' : 'least recently used, to make room'})`);
    return true;
  }

  /** Records `unload` as the resident's unload in progress until it settles. */
  private async unloading(resident: Resident, unload: Promise<void>): Promise<void> {
    const settled = unload.then(
      () => undefined,
      () => undefined,
    );
    resident.unloading = settled;
    try {
      await unload;
    } finally {
      if (resident.unloading === settled) resident.unloading = undefined;
    }
  }
}
