// The InferenceService every front end talks to: routing to loaded versions, health, metadata,
// statistics and the repository API, on top of the ModelManager.

import type { InferRequest, InferResponse, InferStreamEvent } from '../contracts/infer.js';
import type { InferenceService, LoadOverride, ModelMetadata, ModelStatistics, RepositoryIndexEntry, ServerMetadata } from '../contracts/inference-service.js';
import type { ModelConfig, ModelTensorConfig } from '../contracts/model-config.js';
import { repositoryModelName } from '../contracts/model-names.js';
import type { ModelControlMode } from '../config/server-options.js';
import { ConveyorError, invalidArg, serverDraining } from '../errors.js';
import type { ModelManager } from './model-manager.js';
import type { ServedModel } from './served-model.js';
import { LlmModel } from './llm-backend.js';
import { wireDataType, wireShape } from './validate-infer.js';
import type { ModelLease, ModelResidency } from './model-residency.js';
import type { KeepAliveMs } from './residency-policy.js';

export const SERVER_NAME = 'conveyor';
export const SERVER_VERSION = '0.1.0';

/** The KServe / Triton extensions this server implements (perf_analyzer looks for statistics). */
export const EXTENSIONS = [
  'classification',
  'model_repository',
  'model_repository(unload_dependents)',
  'schedule_policy',
  'model_configuration',
  'binary_tensor_data',
  'parameters',
  'statistics',
  // The endpoints exist; trace settings are stored and returned, and say that nothing is traced.
  'trace',
  'logging',
] as const;

export interface ServiceOptions {
  readonly mode: ModelControlMode;
  readonly strictReadiness: boolean;
  /** Models loaded on demand, idle unload and sleep (src/serving/model-residency.ts); absent, models stay as loaded. */
  readonly residency?: ModelResidency;
}

export class ConveyorService implements InferenceService {
  private shuttingDown = false;

  constructor(
    private readonly manager: ModelManager,
    private readonly options: ServiceOptions,
  ) {}

  /**
   * The drain begins: readiness turns false at once, so load balancers and orchestrators stop
   * sending, while liveness stays true until the process exits (a failing liveness probe would
   * get the server killed mid-drain). New inference requests are refused as retryable.
   */
  beginShutdown(): void {
    this.shuttingDown = true;
  }

  /** True from the start of the drain until exit. */
  get draining(): boolean {
    return this.shuttingDown;
  }

  serverMetadata(): ServerMetadata {
    return { name: SERVER_NAME, version: SERVER_VERSION, extensions: EXTENSIONS };
  }

  isLive(): boolean {
    return true;
  }

  isReady(): boolean {
    return !this.shuttingDown && (!this.options.strictReadiness || this.manager.allReady());
  }

  modelReady(name: string, version?: string): boolean {
    if (this.shuttingDown) return false;
    try {
      this.manager.resolve(name, version);
      return true;
    } catch {
      return false;
    }
  }

  modelMetadata(id: string, version?: string): ModelMetadata {
    const served = this.manager.loaded(id, version);
    const name = served.name;
    const { config } = served;
    const describe = (t: ModelTensorConfig) => ({ name: t.name, datatype: wireDataType(t.data_type), shape: wireShape(config, t) });
    const versions = version
      ? [version]
      : this.manager
          .servedModels()
          .filter((m) => m.name === name)
          .map((m) => String(m.version))
          .sort((a, b) => Number(a) - Number(b));
    return {
      name,
      versions,
      platform: config.platform || config.backend,
      inputs: config.input.map(describe),
      outputs: config.output.map(describe),
      parameters: served.variant,
    };
  }

  modelConfig(name: string, version?: string): ModelConfig {
    return this.manager.loaded(name, version).config;
  }

  modelStatistics(id?: string, version?: string): ModelStatistics[] {
    const name = id === undefined ? undefined : repositoryModelName(id);
    if (name !== undefined) this.manager.loaded(name, version); // unknown model / version → error
    return this.manager
      .servedModels()
      .filter((m) => (name === undefined || m.name === name) && (!version || String(m.version) === version))
      .sort((a, b) => a.name.localeCompare(b.name) || a.version - b.version)
      .map((m) => this.withMemory(m));
  }

  /** Triton's memory_usage: the server's accounting of the version (weights and KV pool, not RSS), on its device. */
  private withMemory(served: ServedModel): ModelStatistics {
    const statistics = served.statistics();
    const bytes = this.manager.memoryOf(served);
    if (!bytes) return statistics;
    const type = served.config.instance_group.some((g) => g.kind === 'KIND_GPU') ? 'GPU' : 'CPU';
    return { ...statistics, memory_usage: [{ type, id: 0, byte_size: bytes.weights + bytes.kvCache }] };
  }

  /** True while `name` is being loaded or unloaded: a request for it is retryable, not unknown. */
  modelChanging(name: string): boolean {
    return this.manager.isChanging(name);
  }

  async infer(request: InferRequest, signal?: AbortSignal): Promise<InferResponse> {
    this.refuseWhileDraining();
    // A lease here covers gRPC too (HTTP routes already hold one: a second is harmless).
    const lease = await this.options.residency?.acquire(request.model);
    try {
      return await this.manager.resolve(request.model, request.version).infer(request, signal);
    } finally {
      lease?.release();
    }
  }

  /** The request's responses when its model streams them itself (a decoupled TypeScript model); undefined for any other. */
  inferStream(request: InferRequest, signal?: AbortSignal): AsyncIterable<InferStreamEvent> | undefined {
    this.refuseWhileDraining();
    const served = this.manager.resolve(request.model, request.version);
    return served.inferStream?.(request, signal);
  }

  /** A lease on `name` for one request (loads it on demand); an empty one without a residency. */
  async acquire(name: string, keepAliveMs?: KeepAliveMs): Promise<ModelLease> {
    return (await this.options.residency?.acquire(name, keepAliveMs)) ?? { release: () => undefined };
  }

  get residency(): ModelResidency | undefined {
    return this.options.residency;
  }

  /** The LLM a generation request names (OpenAI model id, Triton model name); INVALID_ARG if it is not one. */
  llmModel(name: string, version?: string): LlmModel {
    this.refuseWhileDraining();
    const served = this.manager.resolve(name, version);
    if (!(served instanceof LlmModel)) throw invalidArg(`model '${name}' is not a generative (llm) model`);
    return served;
  }

  /** Every READY LLM version (the OpenAI model list). */
  llmModels(): LlmModel[] {
    return this.manager.servedModels().filter((m): m is LlmModel => m instanceof LlmModel);
  }

  repositoryIndex(readyOnly: boolean): Promise<RepositoryIndexEntry[]> {
    return this.manager.index(readyOnly);
  }

  async loadModel(name: string, override?: LoadOverride): Promise<void> {
    this.requireExplicitMode('load');
    const load = () => this.manager.load(name, override);
    await (this.options.residency ? this.options.residency.observedLoad(name, load) : load());
  }

  async unloadModel(name: string, options: { unloadDependents?: boolean } = {}): Promise<void> {
    this.requireExplicitMode('unload');
    await this.manager.unload(name, { dependents: options.unloadDependents === true });
    this.options.residency?.noteExplicitUnload(name);
  }

  /** Every new inference request during the drain: UNAVAILABLE, which each front end answers as retryable. */
  private refuseWhileDraining(): void {
    if (this.shuttingDown) throw serverDraining();
  }

  private requireExplicitMode(action: string): void {
    if (this.options.mode === 'poll') throw invalidArg(`explicit model ${action} is not allowed if polling is enabled`);
    if (this.options.mode === 'none') {
      throw new ConveyorError('UNSUPPORTED', `explicit model ${action} is not allowed when the model control mode is 'none'`);
    }
  }
}
