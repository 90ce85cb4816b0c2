// Triton's ensemble rules. `validateEnsembleConfig` runs with the other config rules and needs
// only the ensemble's own config: the steps' maps, what each ensemble tensor is written and read
// by, and that the steps form no cycle. `checkComposingModels` runs when the ensemble loads,
// against the configs of the composing models then loaded: every mapped name exists, every
// required input is fed, and each ensemble tensor has one datatype and compatible shapes
// wherever it appears. Messages name the field (`ensemble_scheduling.step[2] ('bert') input_map`).
import type { ConfigDataType, ModelConfig, ModelTensorConfig } from '../../contracts/model-config.js';
import { invalidArg } from '../../errors.js';
import type { Locator } from './locate.js';

export const ENSEMBLE_PLATFORM = 'ensemble';

export type EnsembleStep = NonNullable<ModelConfig['ensemble_scheduling']>['step'][number];

/** How messages name step `index` (0-based in the config; people count steps from 1). */
export const stepLabel = (step: EnsembleStep, index: number): string => `ensemble_scheduling.step[${index + 1}] ('${step.model_name}')`;

/** The version a step asks for: undefined for the latest (-1, or 0 when the field is left out). */
export const stepVersion = (step: EnsembleStep): string | undefined => (step.model_version > 0 ? String(step.model_version) : undefined);

export function validateEnsembleConfig(config: ModelConfig, loc: Locator): void {
  const scheduling = config.ensemble_scheduling;
  const isEnsemble = config.platform === ENSEMBLE_PLATFORM;
  if (scheduling === undefined) {
    if (isEnsemble) loc.fail(config, 'platform', `platform 'ensemble' needs ensemble_scheduling with one or more steps`);
    return;
  }
  if (!isEnsemble) loc.fail(config, 'ensemble_scheduling', `ensemble_scheduling is set, but the platform is '${config.platform}'; only platform 'ensemble' takes it`);
  if (config.instance_group.length > 0) loc.fail(config, 'instance_group', `instance_group cannot be set for ensemble '${config.name}': its composing models have their own`);
  if (config.model_warmup.length > 0) loc.fail(config, 'model_warmup', `model_warmup cannot be set for ensemble '${config.name}'`);
  if (scheduling.step.length === 0) loc.fail(scheduling, 'step', `ensemble_scheduling of ensemble '${config.name}' must list one or more steps`);
  scheduling.step.forEach((step, index) => checkStepFields(config, step, index, loc));
  checkDataFlow(config, scheduling.step, loc);
}

function checkStepFields(config: ModelConfig, step: EnsembleStep, index: number, loc: Locator): void {
  const label = stepLabel(step, index);
  const at = (key: string): never => loc.failAt(loc.posOr(step, key, [config.ensemble_scheduling!, `step.${index}`]), messageFor(key));
  const messageFor = (key: string): string => {
    if (key === 'model_name') return `ensemble_scheduling.step[${index + 1}] must set 'model_name'`;
    if (key === 'model_version') return `${label} model_version must be -1 (the latest) or a version >= 1, got ${step.model_version}`;
    if (key === 'self') return `${label} names the ensemble itself; an ensemble cannot contain itself`;
    return `${label} must set '${key}' (key: the model's ${key === 'input_map' ? 'input' : 'output'} name, value: an ensemble tensor name)`;
  };
  if (step.model_name === '') at('model_name');
  if (step.model_name === config.name) loc.failAt(loc.posOr(step, 'model_name', [config.ensemble_scheduling!, `step.${index}`]), messageFor('self'));
  if (step.model_version < -1) at('model_version');
  if (Object.keys(step.input_map).length === 0) at('input_map');
  if (Object.keys(step.output_map).length === 0) at('output_map');
  for (const [map, entries] of [
    ['input_map', step.input_map],
    ['output_map', step.output_map],
  ] as const) {
    for (const [key, value] of Object.entries(entries)) {
      if (value === '') loc.failAt(loc.posOr(step, `${map}.${key}`, [step, map]), `${label} ${map} '${key}' maps to an empty ensemble tensor name`);
    }
  }
}

/** Who writes each ensemble tensor, who reads it, and that every step can run exactly once. */
function checkDataFlow(config: ModelConfig, steps: readonly EnsembleStep[], loc: Locator): void {
  const scheduling = config.ensemble_scheduling!;
  const inputs = new Set(config.input.map((t) => t.name));
  const writer = new Map<string, number>();
  steps.forEach((step, index) => {
    for (const [key, tensor] of Object.entries(step.output_map)) {
      const where = loc.posOr(step, `output_map.${key}`, [step, 'output_map']);
      if (inputs.has(tensor)) loc.failAt(where, `${stepLabel(step, index)} output_map '${key}' writes ensemble tensor '${tensor}', which is an input of the ensemble`);
      const first = writer.get(tensor);
      if (first !== undefined) {
        loc.failAt(
          where,
          `${stepLabel(step, index)} output_map '${key}' writes ensemble tensor '${tensor}', already written by ${stepLabel(steps[first]!, first)}; an ensemble tensor can appear in an output_map only once`,
        );
      }
      writer.set(tensor, index);
    }
  });
  const read = new Set<string>();
  steps.forEach((step, index) => {
    for (const [key, tensor] of Object.entries(step.input_map)) {
      read.add(tensor);
      if (!inputs.has(tensor) && !writer.has(tensor)) {
        loc.failAt(
          loc.posOr(step, `input_map.${key}`, [step, 'input_map']),
          `${stepLabel(step, index)} input_map '${key}' reads ensemble tensor '${tensor}', which is neither an ensemble input nor written by any step's output_map`,
        );
      }
    }
  });
  config.input.forEach((input, i) => {
    if (!read.has(input.name)) loc.failAt(loc.posOr(input, 'name', [config, `input.${i}`]), `ensemble input '${input.name}' is not read by any step's input_map`);
  });
  config.output.forEach((output, i) => {
    if (!writer.has(output.name)) loc.failAt(loc.posOr(output, 'name', [config, `output.${i}`]), `ensemble output '${output.name}' is not written by any step's output_map`);
  });
  const cycle = findCycle(steps, writer);
  if (cycle !== undefined) {
    const path = [...cycle, cycle[0]!].map((i) => `step[${i + 1}] ('${steps[i]!.model_name}')`).join(' → ');
    loc.fail(scheduling, 'step', `ensemble_scheduling steps of ensemble '${config.name}' form a cycle: ${path}`);
  }
}

/** Steps each step waits for (the writers of the tensors it reads), then a cycle among them if any. */
function findCycle(steps: readonly EnsembleStep[], writer: ReadonlyMap<string, number>): number[] | undefined {
  const after = steps.map((step) => [...new Set(Object.values(step.input_map).flatMap((t) => (writer.has(t) ? [writer.get(t)!] : [])))]);
  const state = steps.map(() => 'new' as 'new' | 'open' | 'done');
  const path: number[] = [];
  const visit = (i: number): number[] | undefined => {
    if (state[i] === 'done') return undefined;
    if (state[i] === 'open') return path.slice(path.indexOf(i));
    state[i] = 'open';
    path.push(i);
    for (const j of after[i]!) {
      const found = visit(j);
      if (found) return found;
    }
    path.pop();
    state[i] = 'done';
    return undefined;
  };
  for (let i = 0; i < steps.length; i++) {
    const found = visit(i);
    if (found) {
      // In data-flow order (a writer before its reader), from the first step in the config.
      const flow = found.reverse();
      const start = flow.indexOf(Math.min(...flow));
      return [...flow.slice(start), ...flow.slice(0, start)];
    }
  }
  return undefined;
}

/** One place an ensemble tensor appears: a declared ensemble input/output, or a mapped model tensor. */
interface TensorUse {
  readonly what: string;
  readonly dataType: ConfigDataType;
  /** The full shape, batch dimension (-1) first when the owner batches. */
  readonly shape: readonly number[];
}

const useOf = (what: string, owner: ModelConfig, tensor: ModelTensorConfig): TensorUse => ({
  what,
  dataType: tensor.data_type,
  shape: owner.max_batch_size > 0 ? [-1, ...tensor.dims] : [...tensor.dims],
});

const compatible = (a: readonly number[], b: readonly number[]): boolean => a.length === b.length && a.every((d, i) => d === -1 || b[i] === -1 || d === b[i]);

/**
 * Checks the ensemble against its composing models' loaded configs (`composing[i]` is step i's);
 * throws INVALID_ARG naming the step and map entry at fault.
 */
export function checkComposingModels(config: ModelConfig, composing: readonly ModelConfig[]): void {
  const steps = config.ensemble_scheduling?.step ?? [];
  const uses = new Map<string, TensorUse>();
  const meet = (tensor: string, use: TensorUse, field: string): void => {
    const first = uses.get(tensor);
    if (first === undefined) {
      uses.set(tensor, use);
      return;
    }
    if (first.dataType !== use.dataType) {
      throw invalidArg(`ensemble '${config.name}': ${field}: ensemble tensor '${tensor}' has data type ${use.dataType} as ${use.what} but ${first.dataType} as ${first.what}`);
    }
    if (!compatible(first.shape, use.shape)) {
      throw invalidArg(`ensemble '${config.name}': ${field}: ensemble tensor '${tensor}' has shape [${use.shape.join(',')}] as ${use.what} but [${first.shape.join(',')}] as ${first.what}`);
    }
  };
  for (const input of config.input) meet(input.name, useOf(`ensemble input '${input.name}'`, config, input), `input '${input.name}'`);
  for (const output of config.output) meet(output.name, useOf(`ensemble output '${output.name}'`, config, output), `output '${output.name}'`);
  steps.forEach((step, index) => {
    const model = composing[index]!;
    const label = stepLabel(step, index);
    if (config.max_batch_size > model.max_batch_size) {
      throw invalidArg(
        `ensemble '${config.name}': max_batch_size ${config.max_batch_size} is larger than ${model.max_batch_size}, the max_batch_size of model '${model.name}' in ${label}; an ensemble's max_batch_size must not exceed any composing model's`,
      );
    }
    const inputs = new Map(model.input.map((t) => [t.name, t]));
    for (const [key, tensor] of Object.entries(step.input_map)) {
      const declared = inputs.get(key);
      if (declared === undefined) throw invalidArg(`ensemble '${config.name}': ${label} input_map '${key}': model '${model.name}' has no input '${key}' (it has ${names(model.input)})`);
      meet(tensor, useOf(`input '${key}' of model '${model.name}' (step[${index + 1}])`, model, declared), `${label} input_map '${key}'`);
    }
    const unfed = model.input.filter((t) => !t.optional && !Object.hasOwn(step.input_map, t.name)).map((t) => `'${t.name}'`);
    if (unfed.length > 0) throw invalidArg(`ensemble '${config.name}': ${label} input_map does not feed input ${unfed.join(', ')} of model '${model.name}'`);
    const outputs = new Map(model.output.map((t) => [t.name, t]));
    for (const [key, tensor] of Object.entries(step.output_map)) {
      const declared = outputs.get(key);
      if (declared === undefined) throw invalidArg(`ensemble '${config.name}': ${label} output_map '${key}': model '${model.name}' has no output '${key}' (it has ${names(model.output)})`);
      meet(tensor, useOf(`output '${key}' of model '${model.name}' (step[${index + 1}])`, model, declared), `${label} output_map '${key}'`);
    }
  });
  checkDecoupledStep(config, composing);
}

/** The 0-based index of the step whose model is decoupled, or undefined (checkComposingModels allows one at most). */
export function decoupledStepIndex(composing: readonly ModelConfig[]): number | undefined {
  const index = composing.findIndex((model) => model.model_transaction_policy.decoupled);
  return index < 0 ? undefined : index;
}

/**
 * The ensemble tensors computed from each response of step `index`: its outputs and, transitively,
 * the outputs of every step reading one of them (those steps run once per response).
 */
export function perResponseTensors(config: ModelConfig, index: number): Set<string> {
  const steps = config.ensemble_scheduling?.step ?? [];
  const tensors = new Set(Object.values(steps[index]?.output_map ?? {}));
  for (let grew = true; grew; ) {
    grew = false;
    for (const step of steps) {
      if (!Object.values(step.input_map).some((t) => tensors.has(t))) continue;
      for (const t of Object.values(step.output_map)) {
        if (tensors.has(t)) continue;
        tensors.add(t);
        grew = true;
      }
    }
  }
  return tensors;
}

/**
 * An ensemble with a decoupled step streams, as Triton's does: each response of that step runs
 * the steps reading it once and becomes one response of the ensemble. So every ensemble output
 * must come from those responses, and the ensemble's answers cannot be cached (Triton caches no
 * decoupled model). One decoupled step per ensemble: a second (its responses fanning out inside
 * the first's) is refused by name.
 */
function checkDecoupledStep(config: ModelConfig, composing: readonly ModelConfig[]): void {
  const steps = config.ensemble_scheduling?.step ?? [];
  const decoupled = steps.flatMap((step, index) => (composing[index]?.model_transaction_policy.decoupled ? [stepLabel(step, index)] : []));
  if (decoupled.length === 0) return;
  if (decoupled.length > 1) {
    throw invalidArg(`ensemble '${config.name}': ${decoupled.join(' and ')} are both decoupled; an ensemble streams the responses of one decoupled step, not more`);
  }
  const index = decoupledStepIndex(composing)!;
  const label = decoupled[0]!;
  if (config.response_cache?.enable) {
    throw invalidArg(`ensemble '${config.name}': response_cache cannot be enabled: ${label} is decoupled, so the ensemble streams its responses, and decoupled models are never cached`);
  }
  const perResponse = perResponseTensors(config, index);
  const once = config.output.filter((o) => !perResponse.has(o.name)).map((o) => `'${o.name}'`);
  if (once.length > 0) {
    throw invalidArg(
      `ensemble '${config.name}': output ${once.join(', ')} does not come from the responses of ${label}, which is decoupled: each of its responses becomes one response of the ensemble, so every ensemble output must be computed from them`,
    );
  }
}

const names = (tensors: readonly ModelTensorConfig[]): string => tensors.map((t) => `'${t.name}'`).join(', ') || 'none';
