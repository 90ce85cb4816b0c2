// Triton's config rules (core ValidateModelConfig and the ONNX Runtime backend's checks), with
// messages that point at the offending field. `checkSupported` runs on the config as written,
// before normalization fills anything in; `validateModelConfig` runs on the normalized config.
import type { InstanceGroupConfig, ModelConfig, ParsedModelConfig, UnsupportedField } from '../../contracts/model-config.js';
import { UNSUPPORTED_FIELDS } from '../../contracts/model-config-schema.js';
import type { Locator } from './locate.js';
import { validateDynamicBatching, validateWarmup } from './validate-batching.js';
import { ENSEMBLE_PLATFORM, validateEnsembleConfig } from './validate-ensemble.js';
import { checkRelativeFile, validateTensors } from './validate-tensors.js';

/** Backends Conveyor serves, and the platform name Triton pairs with each (if any). */
export const SUPPORTED_BACKENDS: Readonly<Record<string, string>> = { onnxruntime: 'onnxruntime_onnx', llm: '', typescript: '', javascript: '' };

/** Backends whose models may be decoupled: the LLM's generations, a TypeScript model's response sender. */
const DECOUPLED_BACKENDS: readonly string[] = ['llm', 'typescript', 'javascript'];

/** Refuses what Conveyor cannot serve: scheduling kinds, platforms, backends; checks the name. */
export function checkSupported(config: ParsedModelConfig & Partial<Record<UnsupportedField, unknown>>, loc: Locator, dirName: string): void {
  for (const field of UNSUPPORTED_FIELDS) {
    const value = config[field];
    // Triton's own config JSON prints `"batch_input": []`; an empty list asks for nothing.
    const empty = Array.isArray(value) && value.length === 0;
    if (value !== undefined && !empty) loc.fail(config, field, `${field} is not supported yet`, 'UNSUPPORTED');
  }
  const name = config.name;
  if (name !== '' && name !== dirName) loc.fail(config, 'name', `model name '${name}' does not match its directory name '${dirName}'`);
  const { backend, platform } = config;
  if (platform === ENSEMBLE_PLATFORM) {
    // An ensemble runs no backend of its own: its steps run on their models' backends.
    if (backend !== '') loc.fail(config, 'backend', `platform 'ensemble' takes no backend, got backend '${backend}'`);
    return;
  }
  if (backend !== '' && !Object.hasOwn(SUPPORTED_BACKENDS, backend)) {
    loc.fail(
      config,
      'backend',
      `backend '${backend}' is not supported (Conveyor serves backends ${Object.keys(SUPPORTED_BACKENDS)
        .map((b) => `'${b}'`)
        .join(', ')})`,
      'UNSUPPORTED',
    );
  }
  const platforms = Object.values(SUPPORTED_BACKENDS).filter((p) => p !== '');
  if (platform !== '' && !platforms.includes(platform)) {
    loc.fail(config, 'platform', `platform '${platform}' is not supported (Conveyor serves platform ${platforms.map((p) => `'${p}'`).join(', ')})`, 'UNSUPPORTED');
  }
  if (backend !== '' && platform !== '' && SUPPORTED_BACKENDS[backend] !== platform) {
    loc.fail(config, 'platform', `platform '${platform}' does not match backend '${backend}'`);
  }
  if (backend === '' && platform === '') {
    loc.fail(config, '', `the config sets neither 'backend' nor 'platform' (use backend: "onnxruntime" or backend: "llm")`);
  }
}

/** Validates a normalized config; throws ConveyorError('INVALID_ARG') naming the field. */
export function validateModelConfig(config: ModelConfig, loc: Locator): void {
  if (config.max_batch_size < 0) loc.fail(config, 'max_batch_size', `max_batch_size must be >= 0, got ${config.max_batch_size}`);
  validateVersionPolicy(config, loc);
  if (config.default_model_filename) checkRelativeFile(config, 'default_model_filename', config.default_model_filename, 'default_model_filename', loc);
  validateTensors(config, loc);
  validateEnsembleConfig(config, loc);
  for (const group of config.instance_group) validateInstanceGroup(group, config, loc);
  validateDynamicBatching(config, loc);
  validateWarmup(config, loc);
  validateTransactionPolicy(config, loc);
}

function validateVersionPolicy(config: ModelConfig, loc: Locator): void {
  const { latest, specific } = config.version_policy;
  if (latest && latest.num_versions < 1) {
    loc.failAt(loc.posOr(latest, 'num_versions', [config.version_policy, 'latest']), 'version_policy latest.num_versions must be >= 1');
  }
  if (specific) {
    const versions = specific.versions;
    if (versions.length === 0) loc.fail(config.version_policy, 'specific', 'version_policy specific lists no versions');
    versions.forEach((v, i) => {
      if (v < 1) loc.failAt(loc.posOr(specific, `versions.${i}`), `version_policy specific version ${v} is not a valid version (versions start at 1)`);
    });
  }
}

function validateInstanceGroup(group: InstanceGroupConfig, config: ModelConfig, loc: Locator): void {
  if (group.count < 0) loc.fail(group, 'count', `instance group '${group.name}' count must be >= 0 (0 means the default), got ${group.count}`);
  if ((group.kind === 'KIND_CPU' || group.kind === 'KIND_MODEL') && group.gpus.length > 0) {
    loc.fail(group, 'gpus', `instance group '${group.name}' has kind ${group.kind} but lists gpus [${group.gpus.join(', ')}]`);
  }
  group.gpus.forEach((gpu, i) => {
    if (gpu < 0) loc.failAt(loc.posOr(group, `gpus.${i}`), `instance group '${group.name}' lists gpu ${gpu}; gpu ids are >= 0`);
  });
  const seen = config.instance_group.find((other) => other.name === group.name);
  if (seen !== group) loc.fail(group, 'name', `instance group name '${group.name}' is used by more than one group`);
}

function validateTransactionPolicy(config: ModelConfig, loc: Locator): void {
  const policy = config.model_transaction_policy;
  if (policy.decoupled && !DECOUPLED_BACKENDS.includes(config.backend)) {
    const backends = DECOUPLED_BACKENDS.map((b) => `'${b}'`).join(', ');
    loc.failAt(loc.posOr(policy, 'decoupled', [config, 'model_transaction_policy']), `model_transaction_policy decoupled is only supported for backends ${backends}, not '${config.backend}'`);
  }
  if (config.response_cache?.enable && policy.decoupled) {
    loc.failAt(loc.posOr(config.response_cache, 'enable', [config, 'response_cache']), 'response_cache cannot be enabled for a decoupled model');
  }
}
