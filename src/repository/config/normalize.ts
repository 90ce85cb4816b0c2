// Triton's NormalizeModelConfig: the defaults a served config carries, so the config endpoint
// prints what Triton prints and the rest of the server never handles "unset".
import type { InstanceGroupConfig, ModelConfig, ModelOptimizationPolicy, ParsedModelConfig } from '../../contracts/model-config.js';
import { SUPPORTED_BACKENDS } from './validate.js';
import { ENSEMBLE_PLATFORM } from './validate-ensemble.js';

export interface NormalizeOptions {
  /** GPU ids present on this machine (default none): decides KIND_AUTO and default groups. */
  readonly gpus?: readonly number[];
}

/**
 * Instances per KIND_CPU group when `count` is unset: Triton's 2 for ONNX Runtime; 1 for LLMs,
 * whose engine owns the whole model in one worker.
 */
export const DEFAULT_CPU_INSTANCE_COUNT: Readonly<Record<string, number>> = { onnxruntime: 2, llm: 1 };
export const DEFAULT_MODEL_FILENAME: Readonly<Record<string, string>> = { onnxruntime: 'model.onnx' };

/** Fills Triton's defaults in place and returns the config (the same object). Idempotent. */
export function normalizeModelConfig(parsed: ParsedModelConfig, dirName: string, options: NormalizeOptions = {}): ModelConfig {
  const config = Object.assign(parsed, {
    version_policy: parsed.version_policy ?? { latest: { num_versions: 1 } },
    model_transaction_policy: parsed.model_transaction_policy ?? { decoupled: false },
  });
  if (config.name === '') config.name = dirName;
  pairBackendAndPlatform(config);
  if (config.default_model_filename === '') config.default_model_filename = DEFAULT_MODEL_FILENAME[config.backend] ?? '';
  config.optimization = normalizeOptimization(config.optimization);
  const batching = config.dynamic_batching;
  if (batching && batching.preferred_batch_size.length === 0 && config.max_batch_size > 0) {
    batching.preferred_batch_size = [config.max_batch_size];
  }
  // An ensemble has no instances: its composing models have their own (Triton leaves its instance_group empty).
  if (config.platform !== ENSEMBLE_PLATFORM) normalizeInstanceGroups(config, options.gpus ?? []);
  return config;
}

function pairBackendAndPlatform(config: ParsedModelConfig): void {
  if (config.backend === '') {
    const backend = Object.entries(SUPPORTED_BACKENDS).find(([, platform]) => platform !== '' && platform === config.platform);
    if (backend) config.backend = backend[0];
  }
  if (config.platform === '') config.platform = SUPPORTED_BACKENDS[config.backend] ?? '';
}

function normalizeOptimization(optimization: ModelOptimizationPolicy | undefined): ModelOptimizationPolicy {
  const policy = optimization ?? { priority: 'PRIORITY_DEFAULT', gather_kernel_buffer_threshold: 0, eager_batching: false };
  policy.input_pinned_memory ??= { enable: true };
  policy.output_pinned_memory ??= { enable: true };
  return policy;
}

function defaultCount(config: ModelConfig, kind: InstanceGroupConfig['kind']): number {
  return kind === 'KIND_CPU' ? (DEFAULT_CPU_INSTANCE_COUNT[config.backend] ?? 1) : 1;
}

/**
 * No group: one group named after the model (KIND_GPU over every GPU when there are GPUs,
 * else KIND_CPU). Each group: name `<model>_<index>`, KIND_AUTO resolved against the GPUs
 * present, count 0 replaced by the default, KIND_GPU without gpus meaning every GPU.
 */
function normalizeInstanceGroups(config: ModelConfig, available: readonly number[]): void {
  if (config.instance_group.length === 0) {
    const kind = available.length > 0 ? 'KIND_GPU' : 'KIND_CPU';
    config.instance_group.push({
      name: config.name,
      kind,
      count: defaultCount(config, kind),
      gpus: [...available],
      secondary_devices: [],
      profile: [],
      passive: false,
      host_policy: '',
    });
    return;
  }
  config.instance_group.forEach((group, index) => {
    if (group.name === '') group.name = `${config.name}_${index}`;
    if (group.kind === 'KIND_AUTO') {
      const onGpu = available.length > 0 && group.gpus.every((g) => available.includes(g));
      group.kind = onGpu ? 'KIND_GPU' : 'KIND_CPU';
      if (!onGpu) group.gpus = [];
    }
    if (group.kind === 'KIND_GPU' && group.gpus.length === 0) group.gpus = [...available];
    if (group.count === 0) group.count = defaultCount(config, group.kind);
  });
}
