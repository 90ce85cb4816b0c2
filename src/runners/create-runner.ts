// Opens a model and picks the runner adapter from its I/O names (ARCHITECTURE.md, "Runners"):
// the engine asks for a ModelRunner and never learns which one it got. Each contract (the Optimum
// decoder's past_key_values, the paged-attention graph's block pools) is one entry in
// RUNNER_CONTRACTS and one case in adapterFor, nothing in the engine.

import type { StepPlan } from '../contracts/generate.js';
import type { SessionMetadata } from '../contracts/worker-messages.js';
import { ConveyorError } from '../errors.js';
import { FaultPoint } from '../runtime/fault-injection.js';
import { ModelSession } from '../runtime/model-session.js';
import type { ModelRunner, RunnerInfo, RunnerKind, RunnerOptions, RunnerStats, StepLogits } from './model-runner.js';
import { PAGED_TOKEN_INPUTS } from './paged-layout.js';
import { PagedRunner } from './paged-runner.js';
import { PastKeyValuesRunner } from './past-key-values-runner.js';

/** Names of a model's inputs and outputs, which is all the choice looks at. */
export interface ModelIoNames {
  readonly inputs: readonly string[];
  readonly outputs: readonly string[];
}

interface RunnerContract {
  readonly kind: RunnerKind;
  /** For the error that lists what is supported. */
  readonly description: string;
  readonly inputs: readonly string[];
  readonly outputs: readonly string[];
}

/** Tried in order; the first contract whose names a model has all of picks its runner. */
export const RUNNER_CONTRACTS: readonly RunnerContract[] = [
  {
    kind: 'past-key-values',
    description: 'an Optimum decoder with past_key_values (PastKeyValuesRunner)',
    inputs: ['input_ids', 'attention_mask', 'past_key_values.0.key', 'past_key_values.0.value'],
    outputs: ['logits', 'present.0.key', 'present.0.value'],
  },
  {
    kind: 'paged',
    description: 'a paged-attention decoder reading the block pool (PagedRunner)',
    inputs: [...PAGED_TOKEN_INPUTS, 'key_cache.0', 'value_cache.0'],
    outputs: ['logits', 'new_key.0', 'new_value.0'],
  },
];

/** The runner for a model with these I/O names; an UNSUPPORTED error naming what was found otherwise. */
export function chooseRunner(names: ModelIoNames): RunnerKind {
  const has = (available: readonly string[], wanted: readonly string[]) => wanted.filter((name) => !available.includes(name));
  const misses = RUNNER_CONTRACTS.map((contract) => ({ contract, missing: [...has(names.inputs, contract.inputs), ...has(names.outputs, contract.outputs)] }));
  const match = misses.find((m) => m.missing.length === 0);
  if (match) return match.contract.kind;
  const supported = misses.map((m) => `${m.contract.description}, which needs ${m.missing.join(', ')}`).join('; ');
  throw new ConveyorError('UNSUPPORTED', `no runner for this model: inputs [${summarize(names.inputs)}], outputs [${summarize(names.outputs)}]; supported: ${supported}`);
}

/**
 * Per-layer names collapse to one entry (past_key_values.{i}.key), so a 32-layer model's error
 * stays readable.
 */
function summarize(names: readonly string[]): string {
  return [...new Set(names.map((name) => name.replace(/\.\d+(?=\.|$)/g, '.{i}')))].join(', ');
}

export function ioNamesOf(metadata: SessionMetadata): ModelIoNames {
  return { inputs: metadata.inputs.map((i) => i.name), outputs: metadata.outputs.map((o) => o.name) };
}

/** Opens the model's session and the runner its inputs call for, with KV storage sized from the budget. */
export async function openModelRunner(options: RunnerOptions): Promise<ModelRunner> {
  const { modelPath, device, intraOpNumThreads, intraOpSpinning } = options;
  const session = await ModelSession.open({ modelPath, device, intraOpNumThreads, intraOpSpinning });
  let runner: ModelRunner;
  try {
    runner = adapterFor(chooseRunner(ioNamesOf(session.metadata)), session, options);
  } catch (error) {
    await session.release();
    throw error;
  }
  return options.faultInjection ? new FaultInjectingRunner(runner, new FaultPoint(options.faultInjection)) : runner;
}

function adapterFor(kind: RunnerKind, session: ModelSession, options: RunnerOptions): ModelRunner {
  switch (kind) {
    case 'past-key-values':
      return PastKeyValuesRunner.forSession(session, options);
    case 'paged':
      return PagedRunner.forSession(session, options);
  }
}

/**
 * TEST-ONLY (src/runtime/fault-injection.ts): throws or exits at the configured execution, as
 * an instance worker does at its model execution, so supervision tests can kill an engine
 * mid-stream. The engine calls execute once per step that has rows to run, so the N of
 * `throw_at_step:N` still counts engine steps.
 */
class FaultInjectingRunner implements ModelRunner {
  constructor(
    private readonly runner: ModelRunner,
    private readonly fault: FaultPoint,
  ) {}

  get info(): RunnerInfo {
    return this.runner.info;
  }

  get stats(): Readonly<RunnerStats> {
    return this.runner.stats;
  }

  async execute(plan: StepPlan): Promise<StepLogits> {
    this.fault.reached();
    return this.runner.execute(plan);
  }

  release(): Promise<void> {
    return this.runner.release();
  }
}
