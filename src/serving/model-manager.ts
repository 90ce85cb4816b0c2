// The model repository's lifecycle: which models and versions are loaded, their states, the
// control modes (none / poll / explicit), load with overrides, unload, and routing a request to
// a READY version. In-flight requests finish on unload or reload; new ones get a clear error.
// A loaded version whose workers crashed stays loaded, but is not READY (for routing, readiness
// and the index) until its supervisor has restarted them.

import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { isServableModelName, repositoryModelName } from '../contracts/model-names.js';
import type { LoadOverride, RepositoryIndexEntry } from '../contracts/inference-service.js';
import type { ModelConfig } from '../contracts/model-config.js';
import { asConveyorError, ConveyorError, invalidArg } from '../errors.js';
import type { ModelControlMode } from '../config/server-options.js';
import type { BackendLoader, HubModelResolver, ServedModel } from './served-model.js';
import { loadModelConfig, modelConfigFromJson } from '../repository/config/index.js';
import { ENSEMBLE_PLATFORM } from '../repository/config/validate-ensemble.js';
import { redactPaths } from '../repository/confine.js';
import { fingerprintModel, listModelNames, versionDirectories } from '../repository/scan.js';
import { selectVersions } from '../repository/version-policy.js';
import { budgetRefusal, estimateVersionsBytes, sumBytes, type VersionBytes } from './memory-budget.js';
import { keptOverrideDir, materializeOverride } from './load-override.js';
import { responseCacheRefusal, withResponseCache, type ServerResponseCache } from './cached-model.js';
import { AskedModels, strictlyReady } from './asked-models.js';
import { composingModels, stillComposed } from './ensemble-dependents.js';
import { hubModelDir, hubModelSpec } from './hub-model-dir.js';
import { pollEvery } from './repository-poll.js';
import { effectiveState, loadedBytes, loadFailure, pickVersion, repositoryIndex, type VersionEntry } from './model-versions.js';

interface ModelEntry {
  config?: ModelConfig;
  versions: Map<number, VersionEntry>;
  fingerprint?: string;
  /** Serializes loads and unloads of this model. */
  busy: Promise<void>;
  /** Loads and unloads asked for and not yet settled (queued on `busy` or running). */
  changes: number;
  /** Set while the model is loaded (not after unload). */
  loaded: boolean;
  /** Load-level failure (bad config, no versions). */
  error?: string;
  /** The temporary directory of `file:` overrides the loaded versions came from; removed when they go. */
  overrideDir?: string;
  /** The override the loaded versions came from, so a wake_up restores the same config. */
  override?: LoadOverride;
}

export interface ModelManagerOptions {
  readonly root: string;
  readonly mode: ModelControlMode;
  readonly loaders: Readonly<Record<string, BackendLoader>>;
  readonly log: (line: string, fields?: Record<string, unknown>) => void;
  /** --memory-budget-bytes: loaded weights and KV pools together; 0 or absent = unlimited. */
  readonly memoryBudgetBytes?: number;
  /** Resolves an llm config's `hf_model` parameter (a Hub model) to its directory; absent, such a config fails to load. */
  readonly hubModels?: HubModelResolver;
  /** --cache-config: the response cache shared by the models whose config enables it; absent, none caches. */
  readonly responseCache?: ServerResponseCache;
}

export { HF_MODEL_PARAMETER } from './hub-model-dir.js';

export class ModelManager {
  private readonly models = new Map<string, ModelEntry>();
  /** The models the server was asked to serve: strict readiness waits for each. */
  private readonly asked = new AskedModels();
  private stopPolling?: () => void;

  constructor(private readonly options: ModelManagerOptions) {}

  get root(): string {
    return this.options.root;
  }

  get mode(): ModelControlMode {
    return this.options.mode;
  }

  /** Startup per control mode: none/poll load everything, explicit only `names` ('*' = all). */
  async start(names: readonly string[] = []): Promise<void> {
    const all = await listModelNames(this.options.root);
    const wanted = this.options.mode === 'explicit' && !names.includes('*') ? names : all;
    for (const name of wanted) this.asked.add(repositoryModelName(name));
    await Promise.all(wanted.map((name) => this.load(name).catch((e: Error) => this.options.log(`${name}: ${e.message}`))));
  }

  startPolling(intervalSecs: number): void {
    this.stopPolling = pollEvery(intervalSecs, () => this.poll(), this.options.log);
  }

  /** Poll mode: load new models, reload changed ones, unload removed ones. */
  async poll(): Promise<void> {
    const present = new Set(await listModelNames(this.options.root));
    for (const [name, entry] of this.models) {
      if (entry.loaded && !present.has(name)) await this.unload(name);
    }
    for (const name of present) {
      const entry = this.models.get(name);
      const fingerprint = await fingerprintModel(join(this.options.root, name));
      if (!entry?.loaded || entry.fingerprint !== fingerprint) await this.load(name).catch(() => undefined);
    }
  }

  // Every name a front end gives goes through repositoryModelName(): ORG/NAME reaches ORG--NAME (src/contracts/model-names.ts).
  load(id: string, override?: LoadOverride): Promise<void> {
    const name = repositoryModelName(id);
    const entry = this.entry(name);
    return this.change(entry, () => this.loadNow(name, entry, override)).catch((error: unknown) => {
      // Whatever failed, a model left with nothing loaded says why in the index (and is not ready).
      if (!entry.loaded && entry.versions.size === 0) entry.error ??= asConveyorError(error).message;
      this.forgetIfAbsent(name, entry);
      throw error;
    });
  }

  /**
   * A failed load of a model the repository does not hold leaves no trace (no index row), as in
   * Triton; a model that is there keeps its UNAVAILABLE row with the reason.
   */
  private forgetIfAbsent(name: string, entry: ModelEntry): void {
    // One the server was asked to serve keeps its row: readiness waits for it, and the row says why.
    if (this.asked.has(name)) return;
    const untouched = entry.changes === 0 && !entry.loaded && entry.versions.size === 0;
    if (untouched && this.models.get(name) === entry && !existsSync(join(this.options.root, name))) this.models.delete(name);
  }

  /**
   * Unloads `id`; with `dependents`, an ensemble's composing models go too (Triton's
   * unload_dependents), each unless another loaded ensemble still uses it.
   */
  async unload(id: string, options: { dependents?: boolean } = {}): Promise<void> {
    const name = repositoryModelName(id);
    const entry = this.models.get(name);
    if (!entry) throw invalidArg(`failed to unload '${name}', no version is available`);
    this.asked.release(name);
    const composing = options.dependents ? composingModels(entry.config) : [];
    await this.change(entry, () => this.unloadNow(name, entry));
    for (const model of composing) {
      const loadedConfigs = [...this.models.values()].filter((other) => other.loaded).map((other) => other.config);
      if (!stillComposed(model, loadedConfigs) && this.models.get(model)?.loaded) await this.unload(model, options);
    }
  }

  /**
   * True while a load or unload of `name` is queued or running, or a version is LOADING or
   * UNLOADING: the model is coming or going, so a request for it should be retried (503), not
   * told the model does not exist.
   */
  isChanging(id: string): boolean {
    const entry = this.models.get(repositoryModelName(id));
    if (!entry) return false;
    return entry.changes > 0 || [...entry.versions.values()].some((v) => v.state === 'LOADING' || v.state === 'UNLOADING');
  }

  /** Names of the models loaded now (some version loaded, READY or restarting). */
  loadedNames(): string[] {
    return [...this.models.entries()].filter(([, e]) => e.loaded).map(([name]) => name);
  }

  /** True when the repository holds `name` (a config.pbtxt in its directory): it can be loaded on demand. */
  inRepository(id: string): boolean {
    const name = repositoryModelName(id);
    return isServableModelName(name) && existsSync(join(this.options.root, name, 'config.pbtxt'));
  }

  /** The config a model is (or would be) loaded with, and its directory: the loaded one, else config.pbtxt read from disk. */
  async repositoryConfig(id: string): Promise<{ config: ModelConfig; modelDir: string }> {
    const name = repositoryModelName(id);
    const entry = this.models.get(name);
    const modelDir = entry?.overrideDir ?? join(this.options.root, name);
    const config = entry?.loaded && entry.config ? entry.config : await loadModelConfig(join(this.options.root, name, 'config.pbtxt'), name, { label: `${name}/config.pbtxt` });
    return { config, modelDir };
  }

  /**
   * Loads `id` unless it is loaded: an ensemble's composing models load with it (Triton loads
   * them along with the ensemble in every control mode). A load or unload of `id` under way is
   * waited for first, so one started with the server is not loaded twice.
   */
  async ensureLoaded(id: string): Promise<void> {
    const name = repositoryModelName(id);
    const entry = this.models.get(name);
    if (entry !== undefined && entry.changes > 0) await entry.busy;
    if (this.models.get(name)?.loaded) return;
    if (!this.inRepository(name)) throw invalidArg(`model '${name}' is not in the model repository`);
    await this.load(name);
  }

  /** The config `id` is loaded with, else its config.pbtxt's. */
  async configOf(id: string): Promise<ModelConfig> {
    if (!this.inRepository(id) && !this.models.get(repositoryModelName(id))?.loaded) throw invalidArg(`model '${repositoryModelName(id)}' is not in the model repository`);
    return (await this.repositoryConfig(id)).config;
  }

  /** The override `name` was last loaded with (undefined: its repository files), for loading it again as it was. */
  lastOverride(id: string): LoadOverride | undefined {
    return this.models.get(repositoryModelName(id))?.override;
  }

  /** Ends the generations still running on every version, READY or UNLOADING; returns how many. */
  abortInFlight(reason: ConveyorError): number {
    let count = 0;
    for (const entry of this.models.values()) {
      for (const version of entry.versions.values()) count += version.served?.abortInFlight?.(reason) ?? 0;
    }
    return count;
  }

  async stop(): Promise<void> {
    this.stopPolling?.();
    await Promise.all([...this.models.keys()].filter((n) => this.models.get(n)!.loaded).map((n) => this.unload(n)));
  }

  /** The version a request goes to: the given one if READY, else the highest READY one. */
  resolve(name: string, version?: string): ServedModel {
    return this.pick(name, version, (v) => effectiveState(v) === 'READY');
  }

  /**
   * Like resolve, but also a loaded version whose workers are restarting: its config, metadata
   * and statistics stay readable while it cannot take requests.
   */
  loaded(name: string, version?: string): ServedModel {
    return this.pick(name, version, (v) => v.state === 'READY');
  }

  private pick(id: string, version: string | undefined, usable: (v: VersionEntry) => boolean): ServedModel {
    const name = repositoryModelName(id);
    const entry = this.models.get(name);
    if (!entry || (!entry.loaded && entry.versions.size === 0)) throw invalidArg(`Request for unknown model: '${name}' is not found`);
    return pickVersion(name, entry.versions, version, usable);
  }

  /** Every loaded version of every model (workers restarting included), for statistics and metrics. */
  servedModels(): ServedModel[] {
    return [...this.models.values()].flatMap((e) => [...e.versions.values()].flatMap((v) => (v.served && v.state === 'READY' ? [v.served] : [])));
  }

  /** Triton's strict readiness (src/serving/asked-models.ts): nothing failed, and every model asked for is loaded and READY. */
  allReady(): boolean {
    return strictlyReady(this.models, this.asked);
  }

  /** The memory accounting's total: every loaded version's weights and KV pool (the old variant too, mid-swap). */
  loadedBytes(): number {
    return loadedBytes(this.models.values());
  }

  /** The accounting's share of one loaded version (weights and KV pool); undefined for one it does not hold. */
  memoryOf(served: ServedModel): VersionBytes | undefined {
    for (const v of this.models.get(served.name)?.versions.values() ?? []) if (v.served === served) return v.bytes;
    return undefined;
  }

  async index(readyOnly: boolean): Promise<RepositoryIndexEntry[]> {
    const names = new Set([...(await listModelNames(this.options.root).catch(() => [])), ...this.models.keys(), ...this.asked]);
    return repositoryIndex([...names].sort(), this.models, readyOnly);
  }

  /** Runs `operation` after the model's previous load or unload, counting it as a pending change. */
  private change(entry: ModelEntry, operation: () => Promise<void>): Promise<void> {
    entry.changes += 1;
    const run = entry.busy.then(operation).finally(() => (entry.changes -= 1));
    entry.busy = run.catch(() => undefined);
    return run;
  }

  private entry(name: string): ModelEntry {
    if (!isServableModelName(name)) throw invalidArg(`invalid model name '${name}'`);
    let entry = this.models.get(name);
    if (!entry) {
      entry = { versions: new Map(), busy: Promise.resolve(), changes: 0, loaded: false };
      this.models.set(name, entry);
    }
    return entry;
  }

  private async loadNow(name: string, entry: ModelEntry, override?: LoadOverride): Promise<void> {
    const overrideDir = override?.files ? await materializeOverride(name, override) : undefined;
    const serving = entry.versions;
    try {
      await this.loadFrom(name, entry, overrideDir ?? join(this.options.root, name), override);
    } catch (error) {
      throw this.redacted(error, name, overrideDir);
    } finally {
      // The versions now serving decide which override directory must live on.
      const replaced = entry.versions !== serving;
      const servesNew = replaced && [...entry.versions.values()].some((v) => v.state === 'READY');
      entry.overrideDir = await keptOverrideDir(entry.overrideDir, overrideDir, replaced, servesNew);
    }
  }

  /** Errors name paths relative to the repository root (the model directory reads as its name). */
  private redacted(error: unknown, name: string, overrideDir: string | undefined): unknown {
    if (!(error instanceof ConveyorError)) return error;
    const modelDir = overrideDir ?? join(this.options.root, name);
    const message = redactPaths(error.message, [
      [modelDir, name],
      [this.options.root, '<repository>'],
    ]);
    return message === error.message ? error : new ConveyorError(error.code, message, error.param);
  }

  private async loadFrom(name: string, entry: ModelEntry, modelDir: string, override?: LoadOverride): Promise<void> {
    if (!existsSync(modelDir)) throw invalidArg(`failed to load '${name}', model directory not found in the repository`);
    let config: ModelConfig;
    try {
      config = override?.config ? modelConfigFromJson(override.config, name) : await loadModelConfig(join(modelDir, 'config.pbtxt'), name, { label: `${name}/config.pbtxt` });
    } catch (error) {
      throw this.refuseLoad(name, entry, (error as Error).message);
    }
    // An ensemble (platform "ensemble") names no backend: its loader is registered under the platform.
    const loaderName = config.platform === ENSEMBLE_PLATFORM ? ENSEMBLE_PLATFORM : config.backend;
    const loader = this.options.loaders[loaderName];
    if (!loader) throw invalidArg(`failed to load '${name}': backend '${loaderName}' is not supported`);
    const cacheRefusal = responseCacheRefusal(config);
    if (cacheRefusal !== undefined) throw invalidArg(`failed to load '${name}': ${cacheRefusal}`);
    const fingerprint = await fingerprintModel(modelDir).catch(() => undefined);
    const hubSpec = hubModelSpec(config);
    if (hubSpec !== undefined) {
      const log = (line: string): void => this.options.log(`${name}: ${line}`);
      ({ config, modelDir } = await hubModelDir(this.options.root, name, config, hubSpec, this.options.hubModels, log, (reason) => this.refuseLoad(name, entry, reason)));
    }
    const versions = await versionDirectories(modelDir);
    const wanted = selectVersions(config.version_policy, versions);
    if (wanted.length === 0) {
      const reason = `at least one version must be available under the version policy of model '${name}'`;
      if (!entry.loaded) entry.error = reason;
      throw invalidArg(`failed to load '${name}': ${reason}`);
    }
    await this.replaceVersions(name, entry, config, modelDir, wanted, loader);
    entry.config = config;
    entry.fingerprint = fingerprint;
    entry.loaded = true;
    entry.error = undefined;
    entry.override = override;
  }

  /** A load refused for `reason` (its config, its Hub model): logged, and the model's reason while nothing of it is loaded. */
  private refuseLoad(name: string, entry: ModelEntry, reason: string): ConveyorError {
    if (!entry.loaded) entry.error = reason;
    this.options.log(`${name}: failed to load: ${reason}`);
    return invalidArg(`failed to load '${name}': ${reason}`);
  }

  /** Loads the wanted versions next to the old ones, then swaps, so serving never pauses. */
  private async replaceVersions(name: string, entry: ModelEntry, config: ModelConfig, modelDir: string, wanted: number[], loader: BackendLoader): Promise<void> {
    const estimates = await this.checkBudget(name, entry, config, modelDir, wanted);
    const fresh = new Map<number, VersionEntry>();
    for (const version of wanted) {
      if (!entry.versions.has(version)) entry.versions.set(version, { state: 'LOADING', reason: '' });
      try {
        const loaded = await loader({ name, version, modelDir, versionDir: join(modelDir, String(version)), config, log: this.options.log, models: this });
        // Every request to the version, from a client or another model, passes the cache from here on.
        const served = withResponseCache(loaded, this.options.responseCache, this.options.log);
        fresh.set(version, { state: 'READY', reason: '', served, bytes: estimates.get(version) });
        this.options.log(`${name}: version ${version} READY`);
      } catch (error) {
        const failure = asConveyorError(error);
        const reason = failure.message;
        fresh.set(version, { state: 'UNAVAILABLE', reason, error: failure });
        this.options.log(`${name}: version ${version} failed to load: ${reason}`);
      }
    }
    const old = entry.versions;
    // A reload that failed keeps the old, working version serving (Triton's behaviour).
    const keepOld = [...fresh.values()].every((v) => v.state !== 'READY') && [...old.values()].some((v) => v.state === 'READY');
    if (keepOld) {
      for (const v of fresh.values()) await v.served?.close();
      throw loadFailure(name, [...fresh.values()]);
    }
    entry.versions = fresh;
    await Promise.all([...old.values()].map((v) => v.served?.close()));
    const failed = [...fresh.values()].filter((v) => v.state !== 'READY');
    if (failed.length > 0) throw loadFailure(name, failed);
  }

  /**
   * Refuses (before anything loads or unloads) a load whose versions would not fit the memory
   * budget beside everything loaded now, the model's own old versions included: they serve until
   * the new ones are READY. Returns each wanted version's estimate, kept while it is loaded.
   */
  private async checkBudget(name: string, entry: ModelEntry, config: ModelConfig, modelDir: string, wanted: readonly number[]): Promise<Map<number, VersionBytes>> {
    const estimates = await estimateVersionsBytes(config, modelDir, name, wanted);
    const needed = sumBytes(estimates.values());
    const refusal = budgetRefusal(name, needed, this.loadedBytes(), this.options.memoryBudgetBytes ?? 0);
    if (refusal !== null) {
      if (!entry.loaded) entry.error = refusal;
      this.options.log(refusal);
      throw invalidArg(refusal);
    }
    return estimates;
  }

  private async unloadNow(name: string, entry: ModelEntry): Promise<void> {
    for (const v of entry.versions.values()) v.state = 'UNLOADING';
    await Promise.all([...entry.versions.values()].map((v) => v.served?.close()));
    entry.versions = new Map();
    if (entry.overrideDir) await rm(entry.overrideDir, { recursive: true, force: true });
    entry.overrideDir = undefined;
    entry.loaded = false;
    entry.error = undefined;
    this.options.log(`${name}: unloaded`);
  }
}
