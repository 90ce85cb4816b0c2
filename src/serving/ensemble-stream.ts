// An ensemble with a decoupled step (an LLM, a decoupled TypeScript model), run as Triton runs
// one: the steps that do not read its responses run once (the prefix, through the DAG scheduler),
// then the decoupled step streams; each of its responses
// runs the steps that read it (the per-response suffix, again through the DAG scheduler) and
// becomes one response of the ensemble, in order, the last one final. Pure like the scheduler:
// the steps run through the functions it is given.

import type { InferStreamEvent } from '../contracts/infer.js';
import type { Tensor } from '../contracts/tensors.js';
import { ConveyorError, asConveyorError } from '../errors.js';
import { copyOf, runEnsemble, stepName, type EnsemblePlan, type PlannedStep, type StepExecutor } from './ensemble-scheduler.js';

/** Streams one step: its responses' outputs under the model's output names, the last with `final`. */
export type StreamingStepExecutor = (step: PlannedStep, inputs: readonly Tensor[], signal: AbortSignal) => AsyncIterable<InferStreamEvent>;

export interface StreamingPlan {
  readonly name: string;
  /** Steps that run once, before the decoupled step starts. */
  readonly prefix: EnsemblePlan;
  readonly decoupled: PlannedStep;
  /** Steps that run once per response of the decoupled step. */
  readonly suffix: EnsemblePlan;
}

/** Splits a validated plan at its decoupled step (index into plan.steps); `perResponse`: the tensors computed from its responses. */
export function planStreaming(plan: EnsemblePlan, decoupledIndex: number, perResponse: ReadonlySet<string>): StreamingPlan {
  const decoupled = plan.steps.find((s) => s.index === decoupledIndex);
  if (decoupled === undefined) throw new ConveyorError('INTERNAL', `ensemble '${plan.name}' has no step ${decoupledIndex + 1}`);
  const readsResponses = (step: PlannedStep): boolean => step.inputs.some(({ tensor }) => perResponse.has(tensor));
  const others = plan.steps.filter((s) => s !== decoupled);
  return {
    name: plan.name,
    prefix: { name: plan.name, steps: others.filter((s) => !readsResponses(s)) },
    decoupled,
    suffix: { name: plan.name, steps: others.filter(readsResponses) },
  };
}

/** One response of the ensemble: the wanted outputs in order; absent on a flags-only final. */
export interface EnsembleStreamEvent {
  readonly outputs?: readonly Tensor[];
  readonly final: boolean;
}

/**
 * Runs the prefix, then streams the decoupled step, running the suffix for each response before
 * taking the next (so a slow postprocess holds the stream back, never piles up responses). A
 * failure anywhere ends the stream with the failing step named; leaving the loop early or
 * aborting `signal` cancels the decoupled step's request (an LLM frees its sequence).
 */
export async function* runEnsembleStream(
  plan: StreamingPlan,
  given: readonly Tensor[],
  wanted: readonly string[],
  execute: StepExecutor,
  executeStream: StreamingStepExecutor,
  signal?: AbortSignal,
): AsyncGenerator<EnsembleStreamEvent> {
  const { decoupled, suffix } = plan;
  const producedLater = new Set([...decoupled.outputs, ...suffix.steps.flatMap((s) => s.outputs)].map((o) => o.tensor));
  const readLater = [...decoupled.inputs, ...suffix.steps.flatMap((s) => s.inputs)].map((i) => i.tensor).filter((t) => !producedLater.has(t));
  const prefixProduces = new Set(plan.prefix.steps.flatMap((s) => s.outputs.map((o) => o.tensor)));
  const givenNames = new Set(given.map((t) => t.name));
  // An optional ensemble input left out is simply not there for the steps that read it.
  const needed = [...new Set(readLater)].filter((t) => givenNames.has(t) || prefixProduces.has(t));
  const onceTensors = await runEnsemble(plan.prefix, given, needed, execute, signal);
  const once = new Map(needed.map((name, i) => [name, onceTensors[i]!]));

  const stop = new AbortController();
  const onAbort = (): void => stop.abort(signal?.reason);
  if (signal?.aborted) onAbort();
  signal?.addEventListener('abort', onAbort, { once: true });
  const decoupledInputs = decoupled.inputs.flatMap(({ modelInput, tensor }) => {
    const value = once.get(tensor);
    // The suffix reads the once-only tensors again for every response: the decoupled step gets its own copy.
    return value === undefined ? [] : [{ ...copyOf(value), name: modelInput }];
  });
  let iterator: AsyncIterator<InferStreamEvent> | undefined;
  try {
    try {
      iterator = executeStream(decoupled, decoupledInputs, stop.signal)[Symbol.asyncIterator]();
    } catch (error) {
      throw named(plan.name, decoupled, error);
    }
    for (;;) {
      let next: IteratorResult<InferStreamEvent>;
      try {
        next = await iterator.next();
      } catch (error) {
        throw named(plan.name, decoupled, error);
      }
      if (next.done) throw new ConveyorError('INTERNAL', `ensemble '${plan.name}' ${stepName(decoupled)}: the stream ended without a final response`);
      const event = next.value;
      if (event.response === undefined) {
        if (event.final) {
          yield { final: true };
          return;
        }
        continue;
      }
      const produced = responseTensors(plan.name, decoupled, event.response.outputs);
      const inputs = [...[...once].filter(([name]) => suffixReads(suffix, name)).map(([, t]) => copyOf(t)), ...produced];
      const outputs = await runEnsemble(suffix, inputs, wanted, execute, stop.signal);
      yield { outputs, final: event.final };
      if (event.final) return;
    }
  } finally {
    signal?.removeEventListener('abort', onAbort);
    // Left early (a client gone, a failing postprocess): the decoupled step's request is cancelled,
    // and its stream closed, so that a producer holding its last event (an LLM's) lets it go.
    stop.abort(new ConveyorError('CANCELLED', 'the ensemble stream was closed before its final response'));
    await iterator?.return?.();
  }
}

const suffixReads = (suffix: EnsemblePlan, tensor: string): boolean => suffix.steps.some((s) => s.inputs.some((i) => i.tensor === tensor));

/** The decoupled step's response under the ensemble's tensor names. */
function responseTensors(ensemble: string, step: PlannedStep, outputs: readonly Tensor[]): Tensor[] {
  return step.outputs.map(({ modelOutput, tensor }) => {
    const output = outputs.find((t) => t.name === modelOutput);
    if (output === undefined) throw new ConveyorError('INTERNAL', `ensemble '${ensemble}' ${stepName(step)}: a response has no output '${modelOutput}'`);
    return { ...output, name: tensor };
  });
}

function named(ensemble: string, step: PlannedStep, error: unknown): ConveyorError {
  const e = asConveyorError(error);
  return new ConveyorError(e.code, `ensemble '${ensemble}' ${stepName(step)}: ${e.message}`, e.param);
}
