// Rules for dynamic_batching (preferred sizes, priority levels, queue policies) and model_warmup.
import type { DynamicBatchingConfig, ModelConfig, ModelWarmup, QueuePolicy } from '../../contracts/model-config.js';
import type { Locator } from './locate.js';
import { checkRelativeFile } from './validate-tensors.js';

export function validateDynamicBatching(config: ModelConfig, loc: Locator): void {
  const batching = config.dynamic_batching;
  if (!batching) return;
  batching.preferred_batch_size.forEach((size, i) => {
    const where = loc.posOr(batching, `preferred_batch_size.${i}`, [batching, 'preferred_batch_size']);
    if (size <= 0) loc.failAt(where, `dynamic_batching preferred_batch_size must be > 0, got ${size}`);
    if (size > config.max_batch_size) {
      const why = config.max_batch_size === 0 ? ' (a model with max_batch_size 0 does not batch)' : '';
      loc.failAt(where, `dynamic_batching preferred_batch_size ${size} is larger than max_batch_size ${config.max_batch_size}${why}`);
    }
  });
  validatePriorities(batching, loc);
  if (batching.preserve_ordering) validatePreserveOrdering(batching, loc);
}

function validatePriorities(batching: DynamicBatchingConfig, loc: Locator): void {
  const levels = batching.priority_levels;
  const level = batching.default_priority_level;
  if (levels > 0 && (level < 1 || level > levels)) {
    loc.failAt(loc.posOr(batching, 'default_priority_level', [batching, 'priority_levels']), `dynamic_batching default_priority_level must be between 1 and priority_levels (${levels}), got ${level}`);
  }
  if (levels === 0 && level !== 0) {
    loc.fail(batching, 'default_priority_level', `dynamic_batching default_priority_level ${level} needs priority_levels >= ${level}, but priority_levels is 0`);
  }
  for (const key of Object.keys(batching.priority_queue_policy)) {
    const value = Number(key);
    if (value < 1 || value > levels) {
      const range = levels === 0 ? 'priority_levels is 0' : `levels are 1 to ${levels}`;
      loc.failAt(loc.posOr(batching, `priority_queue_policy.${key}`), `dynamic_batching priority_queue_policy key ${key} is not a priority level (${range})`);
    }
  }
}

function validatePreserveOrdering(batching: DynamicBatchingConfig, loc: Locator): void {
  if (batching.priority_levels > 1) {
    loc.fail(batching, 'preserve_ordering', `dynamic_batching preserve_ordering allows at most one priority level, got priority_levels ${batching.priority_levels}`);
  }
  const policies: [QueuePolicy, string][] = Object.entries(batching.priority_queue_policy).map(([k, p]) => [p, `priority_queue_policy ${k}`]);
  if (batching.default_queue_policy) policies.unshift([batching.default_queue_policy, 'default_queue_policy']);
  for (const [policy, where] of policies) {
    if (policy.timeout_action === 'DELAY' && policy.default_timeout_microseconds !== 0) {
      loc.failAt(loc.posOr(policy, 'timeout_action'), `dynamic_batching ${where} cannot use timeout_action DELAY with a timeout when preserve_ordering is true`);
    }
  }
}

export function validateWarmup(config: ModelConfig, loc: Locator): void {
  const seen = new Set<string>();
  (config.model_warmup ?? []).forEach((warmup, index) => {
    const element = loc.pos(config, `model_warmup.${index}`);
    if (warmup.name === '') loc.failAt(element, `model_warmup ${index} must set 'name'`);
    if (seen.has(warmup.name)) loc.fail(warmup, 'name', `model_warmup name '${warmup.name}' is used more than once`);
    seen.add(warmup.name);
    const what = `model_warmup '${warmup.name}'`;
    const limit = Math.max(1, config.max_batch_size);
    if (warmup.batch_size < 1 || warmup.batch_size > limit) {
      const range = limit === 1 ? 'must be 1 for a model with max_batch_size 0' : `must be between 1 and max_batch_size (${limit})`;
      loc.failAt(loc.posOr(warmup, 'batch_size') ?? element, `${what} batch_size ${range}, got ${warmup.batch_size}`);
    }
    validateWarmupInputs(warmup, what, config, loc);
  });
}

function validateWarmupInputs(warmup: ModelWarmup, what: string, config: ModelConfig, loc: Locator): void {
  const declared = new Set(config.input.map((i) => i.name));
  for (const [name, input] of Object.entries(warmup.inputs)) {
    const where = loc.posOr(warmup, `inputs.${name}`, [warmup, 'inputs']);
    // Before auto-complete the config may declare no inputs yet; the check reruns after it.
    if (config.input.length > 0 && !declared.has(name)) loc.failAt(where, `${what} input '${name}' is not an input of the model`);
    if (input.data_type === 'TYPE_INVALID') loc.failAt(where, `${what} input '${name}' must set 'data_type'`);
    const sources = [input.zero_data, input.random_data, input.input_data_file].filter((s) => s !== undefined);
    if (sources.length === 0) loc.failAt(where, `${what} input '${name}' must set zero_data, random_data or input_data_file`);
    if (input.input_data_file) checkRelativeFile(input, 'input_data_file', input.input_data_file, `${what} input '${name}' input_data_file`, loc);
  }
  for (const input of config.input) {
    if (!input.optional && !(input.name in warmup.inputs)) {
      loc.failAt(loc.posOr(warmup, 'inputs') ?? loc.pos(warmup, ''), `${what} does not give required input '${input.name}'`);
    }
  }
}
