// Triton's ensembles (platform "ensemble"): a served model whose requests run a graph of steps,
// each step a request to a composing model through that model's own ServedModel.infer — so
// through its validation, dynamic batcher and instances, and concurrent ensemble requests batch
// inside the composing models. Loading an ensemble loads its composing models, then checks the
// steps against their configs. The ensemble is ready while every step's model is: unloading one
// turns the ensemble UNAVAILABLE (index, readiness, requests) with the step's model as the reason.

import type { InferRequest, InferResponse, InferStreamEvent } from '../contracts/infer.js';
import type { ModelConfig } from '../contracts/model-config.js';
import type { Tensor } from '../contracts/tensors.js';
import { ModelStatsRecorder, type FailureReason } from '../batcher/stats.js';
import { ConveyorError, asConveyorError, invalidArg } from '../errors.js';
import { checkComposingModels, decoupledStepIndex, ENSEMBLE_PLATFORM, perResponseTensors, stepLabel } from '../repository/config/validate-ensemble.js';
import { CUSTOM_PRECISION } from '../repository/variants.js';
import type { ModelVariant } from '../contracts/inference-service.js';
import type { SupervisionStatus } from '../threads/worker-supervisor.js';
import { classify } from './classification.js';
import { planEnsemble, runEnsemble, stepName, type EnsemblePlan, type PlannedStep } from './ensemble-scheduler.js';
import { planStreaming, runEnsembleStream, type StreamingPlan } from './ensemble-stream.js';
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
  // A decoupled step makes the ensemble decoupled, as in Triton: it streams (ModelStreamInfer, generate_stream), each response of that step one of its own.
  const decoupled = decoupledStepIndex(composing);
  if (decoupled === undefined) return new EnsembleModel(request.name, request.version, config, plan, models);
  const streaming = planStreaming(plan, decoupled, perResponseTensors(config, decoupled));
  const effective: ModelConfig = { ...config, model_transaction_policy: { ...config.model_transaction_policy, decoupled: true } };
  return new EnsembleModel(request.name, request.version, effective, plan, models, streaming);
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
    /** Present when a step is decoupled: the ensemble then streams. */
    private readonly streaming?: StreamingPlan,
  ) {
    this.stats = new ModelStatsRecorder(name, String(version));
  }

  async infer(request: InferRequest, signal?: AbortSignal): Promise<InferResponse> {
    if (this.streaming) {
      throw new ConveyorError('UNSUPPORTED', `ensemble '${this.name}' is decoupled (${stepName(this.streaming.decoupled)} streams): use ModelStreamInfer, generate_stream or a BLS inferStream`);
    }
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

  /**
   * The request's responses: a decoupled ensemble's one per response of its decoupled step, the
   * last final; any other ensemble's single answer. Leaving the loop early cancels the request.
   */
  async *inferStream(request: InferRequest, signal?: AbortSignal): AsyncGenerator<InferStreamEvent> {
    if (!this.streaming) {
      yield { response: await this.infer(request, signal), final: true };
      return;
    }
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
    const base = { model: this.name, version: String(this.version), ...(request.id ? { id: request.id } : {}) };
    const events = runEnsembleStream(
      this.streaming,
      validated.inputs,
      wanted,
      (step, inputs, stepSignal) => this.runStep(step, request, inputs, stepSignal),
      (step, inputs, stepSignal) => this.streamStep(step, request, inputs, stepSignal),
      signal,
    );
    let done!: () => void;
    const running = new Promise<void>((resolve) => (done = resolve));
    this.running.add(running);
    let recorded = false;
    try {
      for await (const event of events) {
        yield event.outputs ? { response: { ...base, outputs: event.outputs }, final: event.final } : { final: event.final };
      }
      const requestNs = elapsedNs();
      const epochMs = Date.now();
      this.stats.recordExecution(validated.batchSize, { computeInputNs: 0, computeInferNs: requestNs, computeOutputNs: 0 }, epochMs);
      this.stats.recordSuccess({ requestNs, queueNs: 0, computeInputNs: 0, computeInferNs: requestNs, computeOutputNs: 0 }, epochMs);
      recorded = true;
    } catch (error) {
      const e = asConveyorError(error);
      this.stats.recordFailure(elapsedNs(), failureReason(e));
      recorded = true;
      throw e;
    } finally {
      // A consumer that left before the final response cancelled the request.
      if (!recorded) this.stats.recordFailure(elapsedNs(), 'CANCELED');
      this.running.delete(running);
      done();
    }
  }

  /** A step's request: to the step's model as routed now (a reloaded model's new version serves it). */
  private stepRequest(step: PlannedStep, request: InferRequest, inputs: readonly Tensor[]): InferRequest {
    return {
      model: step.modelName,
      ...(step.version !== undefined ? { version: step.version } : {}),
      ...(request.id ? { id: request.id } : {}),
      // Priority and timeout apply to every step, as Triton passes them to composing requests.
      parameters: request.parameters,
      inputs,
      outputs: step.outputs.map((o) => ({ name: o.modelOutput, parameters: {} })),
    };
  }

  private async runStep(step: PlannedStep, request: InferRequest, inputs: readonly Tensor[], signal: AbortSignal): Promise<readonly Tensor[]> {
    const model = this.models.resolve(step.modelName, step.version);
    return (await model.infer(this.stepRequest(step, request, inputs), signal)).outputs;
  }

  /** The decoupled step: its model's own stream (an LLM's generation, a TypeScript model's sender). */
  private streamStep(step: PlannedStep, request: InferRequest, inputs: readonly Tensor[], signal: AbortSignal): AsyncIterable<InferStreamEvent> {
    const model = this.models.resolve(step.modelName, step.version);
    if (!model.inferStream) throw new ConveyorError('UNSUPPORTED', `model '${step.modelName}' (backend '${model.config.backend}') cannot stream`);
    return model.inferStream(this.stepRequest(step, request, inputs), signal);
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
