// Triton's ensembles (platform "ensemble"): a served model whose requests run a graph of steps,
// each step a request to a composing model through that model's own ServedModel.infer — so
// through its validation, dynamic batcher and instances, and concurrent ensemble requests batch
// inside the composing models. Loading an ensemble loads its composing models, then checks the
// steps against their configs. The ensemble is ready while every step's model is: unloading one
// turns the ensemble UNAVAILABLE (index, readiness, requests) with the step's model as the reason.

import type { InferRequest, InferResponse } from '../contracts/infer.js';
import type { ModelConfig } from '../contracts/model-config.js';
import type { Tensor } from '../contracts/tensors.js';
import { ModelStatsRecorder, type FailureReason } from '../batcher/stats.js';
import { ConveyorError, asConveyorError, invalidArg } from '../errors.js';
import { checkComposingModels, ENSEMBLE_PLATFORM, stepLabel } from '../repository/config/validate-ensemble.js';
import { CUSTOM_PRECISION } from '../repository/variants.js';
import type { ModelVariant } from '../contracts/inference-service.js';
import type { SupervisionStatus } from '../threads/worker-supervisor.js';
import { classify } from './classification.js';
import { planEnsemble, runEnsemble, stepName, type EnsemblePlan, type PlannedStep } from './ensemble-scheduler.js';
import type { BackendLoadRequest, ModelRouting, ServedModel } from './served-model.js';
import { validateInferRequest } from './validate-infer.js';

/** The loader's key in the server's loader table: ensembles are named by their platform, not a backend. */
export { ENSEMBLE_PLATFORM };

export async function loadEnsembleModel(request: BackendLoadRequest): Promise<ServedModel> {
  const { config, models } = request;
  if (models === undefined) throw invalidArg(`ensemble '${request.name}' cannot load without the model repository's routing`);
  const steps = config.ensemble_scheduling?.step ?? [];
  await refuseNestedCycle(config, models);
  // Composing models load one after another: two steps naming one model load it once.
  for (const [index, step] of steps.entries()) {
    await models.ensureLoaded(step.model_name).catch((error: unknown) => {
      const e = asConveyorError(error);
      throw new ConveyorError(e.code, `ensemble '${config.name}': ${stepLabel(step, index)} model_name: ${e.message}`);
    });
  }
  const plan = planEnsemble(config);
  const composing = plan.steps.map((step) => {
    try {
      return models.resolve(step.modelName, step.version).config;
    } catch (error) {
      const e = asConveyorError(error);
      throw new ConveyorError(e.code, `ensemble '${config.name}': ${stepLabel(steps[step.index]!, step.index)}: ${e.message}`);
    }
  });
  checkComposingModels(config, composing);
  return new EnsembleModel(request.name, request.version, config, plan, models);
}

/**
 * An ensemble reached again through its steps' ensembles (A contains B contains A) can never
 * load: each would wait for the other's load. Refused at once, from the configs, with the path.
 */
async function refuseNestedCycle(config: ModelConfig, models: ModelRouting): Promise<void> {
  const visit = async (current: ModelConfig, path: readonly string[]): Promise<void> => {
    for (const step of current.ensemble_scheduling?.step ?? []) {
      if (path.includes(step.model_name) || step.model_name === config.name) {
        throw invalidArg(`ensemble '${config.name}' contains itself through its steps' ensembles: ${[...path, step.model_name].map((n) => `'${n}'`).join(' → ')}`);
      }
      const inner = await models.configOf(step.model_name).catch(() => undefined);
      if (inner?.platform === ENSEMBLE_PLATFORM) await visit(inner, [...path, step.model_name]);
    }
  };
  await visit(config, [config.name]);
}

const failureReason = (error: ConveyorError): FailureReason => (error.code === 'CANCELLED' ? 'CANCELED' : 'BACKEND');

class EnsembleModel implements ServedModel {
  /** An ensemble loads no model file; each step runs the variant its own model serves. */
  readonly variant: ModelVariant = { precision: CUSTOM_PRECISION, model_file: '' };
  private readonly stats: ModelStatsRecorder;
  /** Requests under way; close() waits for them. */
  private readonly running = new Set<Promise<unknown>>();

  constructor(
    readonly name: string,
    readonly version: number,
    readonly config: ModelConfig,
    private readonly plan: EnsemblePlan,
    private readonly models: ModelRouting,
  ) {
    this.stats = new ModelStatsRecorder(name, String(version));
  }

  async infer(request: InferRequest, signal?: AbortSignal): Promise<InferResponse> {
    const started = performance.now();
    const elapsedNs = (): number => Math.round((performance.now() - started) * 1e6);
    let validated;
    try {
      validated = validateInferRequest(this.config, request);
    } catch (error) {
      this.stats.recordFailure(elapsedNs(), 'OTHER');
      throw asConveyorError(error);
    }
    const wanted = validated.outputs.map((o) => o.name);
    let outputs: Tensor[];
    const run = runEnsemble(this.plan, validated.inputs, wanted, (step, inputs, stepSignal) => this.runStep(step, request, inputs, stepSignal), signal);
    this.running.add(run);
    try {
      outputs = await run;
    } catch (error) {
      const e = asConveyorError(error);
      this.stats.recordFailure(elapsedNs(), failureReason(e));
      throw e;
    } finally {
      this.running.delete(run);
    }
    const requestNs = elapsedNs();
    const epochMs = Date.now();
    // The ensemble has no queue of its own; its compute is the pipeline's whole run, one execution per request.
    this.stats.recordExecution(validated.batchSize, { computeInputNs: 0, computeInferNs: requestNs, computeOutputNs: 0 }, epochMs);
    this.stats.recordSuccess({ requestNs, queueNs: 0, computeInputNs: 0, computeInferNs: requestNs, computeOutputNs: 0 }, epochMs);
    const batched = this.config.max_batch_size > 0;
    return {
      model: this.name,
      version: String(this.version),
      ...(request.id ? { id: request.id } : {}),
      outputs: outputs.map((tensor, i) => {
        const classification = validated.outputs[i]!.parameters.classification;
        return classification === undefined ? tensor : classify(tensor, Number(classification), undefined, batched);
      }),
    };
  }

  /** One step: a request to the step's model as routed now (a reloaded model's new version serves it). */
  private async runStep(step: PlannedStep, request: InferRequest, inputs: readonly Tensor[], signal: AbortSignal): Promise<readonly Tensor[]> {
    const model = this.models.resolve(step.modelName, step.version);
    const response = await model.infer(
      {
        model: step.modelName,
        ...(step.version !== undefined ? { version: step.version } : {}),
        ...(request.id ? { id: request.id } : {}),
        // Priority and timeout apply to every step, as Triton passes them to composing requests.
        parameters: request.parameters,
        inputs,
        outputs: step.outputs.map((o) => ({ name: o.modelOutput, parameters: {} })),
      },
      signal,
    );
    return response.outputs;
  }

  statistics() {
    return this.stats.snapshot();
  }

  failures() {
    return this.stats.failures();
  }

  /** Ready while every step's model is: a composing model unloaded (or restarting) makes the ensemble UNAVAILABLE, saying which. */
  supervision(): SupervisionStatus {
    for (const step of this.plan.steps) {
      try {
        this.models.resolve(step.modelName, step.version);
      } catch (error) {
        return { ready: false, state: 'UNAVAILABLE', reason: `composing model of ${stepName(step)} is not ready: ${(error as Error).message}`, restarts: 0 };
      }
    }
    return { ready: true, state: 'READY', reason: '', restarts: 0 };
  }

  /** No instances of its own: waits for the requests under way (the manager routes no new ones here once it unloads). */
  async close(): Promise<void> {
    await Promise.allSettled([...this.running]);
  }
}
