// The "typescript" backend (also named "javascript"): Triton's Python backend, for TypeScript. A
// version directory holds model.ts or model.js exporting a class with initialize / execute /
// finalize (src/backend-api/); its instances run on worker threads (typescript-instances.ts)
// behind the same dynamic batcher as ONNX models, each batch handed to execute() as its list of
// requests. A decoupled model (model_transaction_policy { decoupled: true }) streams its responses
// through inferStream (gRPC ModelStreamInfer). The config declares every input and output: there
// is no model file to complete it from. See docs/typescript-backend.md.

import { DEFAULT_LIMITS } from '../config/limits.js';
import type { InferRequest, InferResponse, InferStreamEvent } from '../contracts/infer.js';
import type { ModelConfig } from '../contracts/model-config.js';
import type { Tensor } from '../contracts/tensors.js';
import type { TypeScriptWorkerData } from '../contracts/typescript-model.js';
import { asConveyorError, ConveyorError, invalidArg } from '../errors.js';
import { confinedPath, existingConfinedFile } from '../repository/confine.js';
import { instanceCount } from './onnx-backend.js';
import type { BackendLoadRequest, ServedModel } from './served-model.js';
import { validateInferRequest } from './validate-infer.js';
import { TypeScriptInstances } from './typescript-instances.js';
import { BatchedModel } from './batched-model.js';

/** The backend names this loader serves (Triton-style configs may say either). */
export const TYPESCRIPT_BACKENDS = ['typescript', 'javascript'] as const;

/** Files a version directory is searched for, in order, when default_model_filename is unset. */
export const TYPESCRIPT_MODEL_FILES = ['model.ts', 'model.js', 'model.mjs'] as const;

/** Config parameter: how long a batch may run without finishing or sending a response before its instance is restarted. */
export const EXECUTE_TIMEOUT_PARAMETER = 'execute_timeout_secs';
export const DEFAULT_EXECUTE_TIMEOUT_SECS = 60;

export function executeTimeoutSecs(config: ModelConfig): number {
  const text = config.parameters[EXECUTE_TIMEOUT_PARAMETER]?.string_value;
  if (text === undefined) return DEFAULT_EXECUTE_TIMEOUT_SECS;
  const seconds = Number(text);
  if (!Number.isFinite(seconds) || seconds <= 0) throw invalidArg(`parameter ${EXECUTE_TIMEOUT_PARAMETER} of model '${config.name}' must be a number of seconds > 0, got '${text}'`);
  return seconds;
}

function requireDeclaredTensors(config: ModelConfig): void {
  for (const section of ['input', 'output'] as const) {
    if (config[section].length === 0) {
      throw invalidArg(`model '${config.name}' (backend '${config.backend}') must declare its ${section}s in the config: a TypeScript model has no file to complete them from`);
    }
  }
}

async function modelFile(request: BackendLoadRequest): Promise<{ path: string; file: string }> {
  const root = { dir: request.versionDir, display: `${request.name}/${request.version}` };
  const named = request.config.default_model_filename;
  if (named) return { path: (await existingConfinedFile(root, named, 'model file')).path, file: named };
  for (const file of TYPESCRIPT_MODEL_FILES) {
    const found = await confinedPath(root, file, 'model file');
    if (found.exists) return { path: found.path, file };
  }
  throw invalidArg(`model '${request.name}' version ${request.version} has no model file: expected ${TYPESCRIPT_MODEL_FILES.join(' or ')} in '${root.display}'`);
}

export async function loadTypeScriptModel(request: BackendLoadRequest): Promise<ServedModel> {
  requireDeclaredTensors(request.config);
  const timeoutSecs = executeTimeoutSecs(request.config);
  const { path, file } = await modelFile(request);
  const config: ModelConfig = { ...request.config, default_model_filename: file };
  const label = `${request.name}:${request.version}`;
  const threadNice = (request.limits ?? DEFAULT_LIMITS).computeThreadNice;
  const data = (index: number): TypeScriptWorkerData => ({
    modelFile: path,
    decoupled: config.model_transaction_policy.decoupled,
    label,
    ...(threadNice ? { threadNice } : {}),
    args: {
      model_config: config,
      model_name: request.name,
      model_version: String(request.version),
      model_repository: request.modelDir,
      model_version_dir: request.versionDir,
      model_instance_kind: 'CPU',
      model_instance_name: `${request.name}_${index}`,
      model_instance_index: index,
    },
  });
  const instances = await TypeScriptInstances.start({
    config,
    count: instanceCount(config),
    data,
    executeTimeoutMs: timeoutSecs * 1000,
    label,
    log: request.log,
    ...(request.models ? { models: request.models } : {}),
  });
  return new TypeScriptModel(request.name, request.version, config, instances);
}

class TypeScriptModel extends BatchedModel {
  constructor(name: string, version: number, config: ModelConfig, instances: TypeScriptInstances) {
    super(name, version, config, { precision: 'custom', model_file: config.default_model_filename }, instances);
  }

  private get decoupled(): boolean {
    return this.config.model_transaction_policy.decoupled;
  }

  async infer(request: InferRequest, signal?: AbortSignal): Promise<InferResponse> {
    if (this.decoupled) throw new ConveyorError('UNSUPPORTED', `model '${this.name}' is decoupled: stream it with ModelStreamInfer`);
    const validated = this.validate(request);
    const { outputs } = await this.batcher.enqueue({ ...request, inputs: validated.inputs, outputs: validated.outputs }, signal);
    return this.response(request, outputs);
  }

  /**
   * The request's responses as they are sent (a model that is not decoupled sends one), the last
   * with `final`. Leaving the loop early cancels the request, as a client going away does.
   */
  async *inferStream(request: InferRequest, signal?: AbortSignal): AsyncGenerator<InferStreamEvent> {
    const validated = this.validate(request);
    const controller = new AbortController();
    const onAbort = (): void => controller.abort(signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    const pending: Tensor[][] = [];
    let wake: (() => void) | undefined;
    let outcome: { error?: ConveyorError; outputs?: readonly Tensor[] } | undefined;
    const onResponse = this.decoupled
      ? (outputs: readonly Tensor[]) => {
          pending.push([...outputs]);
          wake?.();
        }
      : undefined;
    this.batcher.enqueue({ ...request, inputs: validated.inputs, outputs: validated.outputs }, controller.signal, onResponse).then(
      (result) => {
        outcome = { outputs: result.outputs };
        wake?.();
      },
      (error: unknown) => {
        outcome = { error: asConveyorError(error) };
        wake?.();
      },
    );
    try {
      for (;;) {
        while (pending.length === 0 && outcome === undefined) await new Promise<void>((resolve) => (wake = resolve));
        const next = pending.shift();
        if (next) {
          yield { response: this.response(request, next), final: false };
          continue;
        }
        if (outcome?.error) throw outcome.error;
        // A model that is not decoupled answers once, finally; a decoupled one ends with a flags-only final.
        yield this.decoupled ? { final: true } : { response: this.response(request, outcome?.outputs ?? []), final: true };
        return;
      }
    } finally {
      signal?.removeEventListener('abort', onAbort);
      if (outcome === undefined) controller.abort(new ConveyorError('CANCELLED', 'the stream was closed before its final response'));
    }
  }

  private validate(request: InferRequest): ReturnType<typeof validateInferRequest> {
    try {
      return validateInferRequest(this.config, request);
    } catch (error) {
      this.batcher.stats.recordFailure(0, 'OTHER');
      throw asConveyorError(error);
    }
  }

  private response(request: InferRequest, outputs: readonly Tensor[]): InferResponse {
    return { model: this.name, version: String(this.version), ...(request.id ? { id: request.id } : {}), outputs };
  }
}
