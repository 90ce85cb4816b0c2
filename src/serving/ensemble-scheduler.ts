// The ensemble's DAG scheduler, pure: given the ensemble's steps and a function that runs one
// step, it starts each step as soon as every ensemble tensor it reads exists (independent branches
// run at once), renames tensors between the ensemble's names and each model's, and hands tensors
// from step to step in process. A failing step fails the request with its own error, prefixed by
// the step it came from; the other steps still running are told to stop through their signal.

import type { ModelConfig } from '../contracts/model-config.js';
import type { Tensor } from '../contracts/tensors.js';
import { ConveyorError, asConveyorError } from '../errors.js';
import { stepVersion } from '../repository/config/validate-ensemble.js';

export interface PlannedStep {
  /** 0-based position in ensemble_scheduling.step. */
  readonly index: number;
  readonly modelName: string;
  /** Undefined: the latest READY version. */
  readonly version?: string;
  /** model input name ← ensemble tensor name. */
  readonly inputs: readonly { readonly modelInput: string; readonly tensor: string }[];
  /** model output name → ensemble tensor name. */
  readonly outputs: readonly { readonly modelOutput: string; readonly tensor: string }[];
}

export interface EnsemblePlan {
  readonly name: string;
  readonly steps: readonly PlannedStep[];
}

/** The steps of a validated ensemble config. */
export function planEnsemble(config: ModelConfig): EnsemblePlan {
  const steps = (config.ensemble_scheduling?.step ?? []).map((step, index) => ({
    index,
    modelName: step.model_name,
    ...(stepVersion(step) !== undefined ? { version: stepVersion(step) } : {}),
    inputs: Object.entries(step.input_map).map(([modelInput, tensor]) => ({ modelInput, tensor })),
    outputs: Object.entries(step.output_map).map(([modelOutput, tensor]) => ({ modelOutput, tensor })),
  }));
  return { name: config.name, steps };
}

/** How errors name a step: `step 2 ('bert')`, counted from 1 as people read a config. */
export const stepName = (step: PlannedStep): string => `step ${step.index + 1} ('${step.modelName}')`;

/**
 * Runs one step: `inputs` carry the model's input names; resolves with at least the outputs the
 * step maps, under the model's output names. Rejects with a ConveyorError.
 */
export type StepExecutor = (step: PlannedStep, inputs: readonly Tensor[], signal: AbortSignal) => Promise<readonly Tensor[]>;

/**
 * Runs every step once, in dependency order and concurrently where the graph allows, and resolves
 * with the ensemble tensors named in `wanted`. `given` are the request's inputs under the
 * ensemble's input names; an optional input left out is simply not passed to the steps reading it.
 */
export function runEnsemble(plan: EnsemblePlan, given: readonly Tensor[], wanted: readonly string[], execute: StepExecutor, signal?: AbortSignal): Promise<Tensor[]> {
  return new Promise<Tensor[]>((resolve, reject) => {
    const stop = new AbortController();
    const available = new Map<string, Tensor>(given.map((t) => [t.name, t]));
    const waiting = new Set(plan.steps);
    // Where a tensor has more than one reader, each but the last gets a copy: a step may hand its
    // input's buffer to a worker thread (transferred, so no longer readable here).
    const readersLeft = new Map<string, number>();
    for (const step of plan.steps) for (const { tensor } of step.inputs) readersLeft.set(tensor, (readersLeft.get(tensor) ?? 0) + 1);
    for (const name of wanted) readersLeft.set(name, (readersLeft.get(name) ?? 0) + 1);
    let running = 0;
    let settled = false;

    const finish = (error?: ConveyorError): void => {
      if (settled) return;
      settled = true;
      signal?.removeEventListener('abort', onAbort);
      if (error === undefined) {
        resolve(wanted.map((name) => available.get(name)!));
        return;
      }
      stop.abort();
      reject(error);
    };
    const onAbort = (): void => finish(new ConveyorError('CANCELLED', 'request cancelled'));
    if (signal?.aborted) return onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });

    const ready = (step: PlannedStep): boolean => step.inputs.every(({ tensor }) => available.has(tensor) || !producedLater(tensor));
    // A tensor no waiting or running step writes will never appear (an optional input left out).
    const producedLater = (tensor: string): boolean => [...waiting, ...inFlight].some((s) => s.outputs.some((o) => o.tensor === tensor));
    const inFlight = new Set<PlannedStep>();

    const take = (tensor: string): Tensor | undefined => {
      const value = available.get(tensor);
      if (value === undefined) return undefined;
      const left = (readersLeft.get(tensor) ?? 1) - 1;
      readersLeft.set(tensor, left);
      return left > 0 ? copyOf(value) : value;
    };

    const launch = (step: PlannedStep): void => {
      waiting.delete(step);
      inFlight.add(step);
      running += 1;
      const inputs = step.inputs.flatMap(({ modelInput, tensor }) => {
        const value = take(tensor);
        return value === undefined ? [] : [{ ...value, name: modelInput }];
      });
      // A promise even if `execute` throws at once: the failure is the step's, named like any other.
      new Promise<readonly Tensor[]>((done) => done(execute(step, inputs, stop.signal))).then(
        (outputs) => {
          if (settled) return;
          for (const { modelOutput, tensor } of step.outputs) {
            const output = outputs.find((t) => t.name === modelOutput);
            if (output === undefined) return finish(new ConveyorError('INTERNAL', `ensemble '${plan.name}' ${stepName(step)}: the model returned no output '${modelOutput}'`));
            available.set(tensor, { ...output, name: tensor });
          }
          inFlight.delete(step);
          running -= 1;
          advance();
        },
        (error: unknown) => {
          const e = asConveyorError(error);
          finish(new ConveyorError(e.code, `ensemble '${plan.name}' ${stepName(step)}: ${e.message}`, e.param));
        },
      );
    };

    const advance = (): void => {
      if (settled) return;
      for (const step of [...waiting]) if (ready(step)) launch(step);
      if (running === 0) {
        const missing = wanted.filter((name) => !available.has(name));
        if (waiting.size > 0 || missing.length > 0) {
          finish(new ConveyorError('INTERNAL', `ensemble '${plan.name}' stopped with ${waiting.size} step(s) unable to run and output(s) ${missing.join(', ') || 'none'} missing`));
        } else {
          finish();
        }
      }
    };
    advance();
  });
}

/** A tensor with its own copy of the data (BYTES elements are never transferred, so they are shared). */
export function copyOf(tensor: Tensor): Tensor {
  if (Array.isArray(tensor.data)) return { ...tensor, data: [...tensor.data] };
  return { ...tensor, data: tensor.data.slice() };
}
