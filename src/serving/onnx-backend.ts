// The "onnxruntime" backend: a model version served by N instance workers behind Triton's
// dynamic batcher. Requests are validated against the config before they are queued.

import { readFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { DEFAULT_LIMITS } from '../config/limits.js';
import type { InferRequest, InferResponse } from '../contracts/infer.js';
import type { ModelConfig } from '../contracts/model-config.js';
import { isObject } from '../vocabulary/json-object.js';
import { intraOpSpinningOf } from './ort-threading.js';
import type { Tensor } from '../contracts/tensors.js';
import type { Device } from '../contracts/worker-messages.js';
import { asConveyorError, ConveyorError, invalidArg } from '../errors.js';
import { completeFromModelMetadata } from '../repository/config/index.js';
import { confinedPath, existingConfinedFile, redactPaths, type ConfinementRoot } from '../repository/confine.js';
import { presentVariantFile, servedVariant } from '../repository/variants.js';
import { faultInjectionOf } from '../threads/fault-injection.js';
import { InstancePool } from './instance-pool.js';
import { classify } from './classification.js';
import type { BackendLoadRequest, ServedModel } from './served-model.js';
import { checkInputRanges, inputRangesFromHfConfig, type InputRanges } from './input-ranges.js';
import { validateInferRequest } from './validate-infer.js';
import { BatchedModel } from './batched-model.js';

export async function modelFileFor(config: ModelConfig, versionRoot: ConfinementRoot): Promise<string> {
  const precision = config.parameters.precision?.string_value;
  if (precision === undefined) return config.default_model_filename || 'model.onnx';
  // The `precision` parameter picks one of the variants a version directory holds.
  return presentVariantFile(precision, async (file) => (await confinedPath(versionRoot, file, 'model file')).exists);
}

/** How many instance workers the config asks for; each holds its own session, hence its own copy of the weights. */
export function instanceCount(config: ModelConfig): number {
  return Math.max(
    1,
    config.instance_group.reduce((sum, g) => sum + g.count, 0),
  );
}

function instancePlan(config: ModelConfig): { count: number; device: Device; threads: number; spinning: boolean | undefined } {
  const count = instanceCount(config);
  const device: Device = config.instance_group.some((g) => g.kind === 'KIND_GPU') ? 'cuda' : 'cpu';
  const configured = Number(config.parameters.intra_op_thread_count?.string_value ?? NaN);
  // Instances share the cores: more instances, fewer threads each.
  const threads = Number.isInteger(configured) && configured > 0 ? configured : Math.max(1, Math.floor(availableParallelism() / count));
  return { count, device, threads, spinning: intraOpSpinningOf(config) };
}

async function readLabels(request: BackendLoadRequest, config: ModelConfig): Promise<Map<string, string[]>> {
  const labels = new Map<string, string[]>();
  const modelRoot = { dir: request.modelDir, display: request.name };
  for (const output of config.output) {
    if (!output.label_filename) continue;
    const file = await existingConfinedFile(modelRoot, output.label_filename, `label file of output '${output.name}'`);
    labels.set(
      output.name,
      (await readFile(file.path, 'utf8')).split('\n').filter((line, i, all) => line !== '' || i < all.length - 1),
    );
  }
  return labels;
}

export async function loadOnnxModel(request: BackendLoadRequest): Promise<ServedModel> {
  const versionRoot = { dir: request.versionDir, display: `${request.name}/${request.version}` };
  const modelFile = await modelFileFor(request.config, versionRoot);
  const model = await existingConfinedFile(versionRoot, modelFile, 'model file');
  const ranges = inputRangesFromHfConfig(await readHfConfig(versionRoot), request.config);
  const plan = instancePlan(request.config);
  const faultInjection = faultInjectionOf(request.config, ['execution'], request.log);
  const pool = await InstancePool.start({
    modelPath: model.path,
    count: plan.count,
    device: plan.device,
    intraOpNumThreads: plan.threads,
    intraOpSpinning: plan.spinning,
    label: `${request.name}:${request.version}`,
    log: request.log,
    threadNice: (request.limits ?? DEFAULT_LIMITS).computeThreadNice,
    ...(faultInjection ? { faultInjection } : {}),
  }).catch((error: unknown) => {
    // onnxruntime quotes the path it was given; messages name it relative to the repository.
    const e = asConveyorError(error);
    throw new ConveyorError(
      e.code,
      redactPaths(e.message, [
        [model.path, model.display],
        [request.versionDir, versionRoot.display],
      ]),
    );
  });
  try {
    // The effective config names the file loaded (the precision variant), as Triton's field does.
    const config = { ...completeFromModelMetadata(request.config, pool.metadata), default_model_filename: modelFile };
    const labels = await readLabels(request, config);
    return new OnnxModel(request.name, request.version, config, pool, labels, ranges);
  } catch (error) {
    await pool.close();
    throw error;
  }
}

/** The version directory's Hugging Face config.json, when it has one (it sizes the embedding tables). */
async function readHfConfig(versionRoot: ConfinementRoot): Promise<Record<string, unknown> | null> {
  const file = await confinedPath(versionRoot, 'config.json', 'config.json');
  if (!file.exists) return null;
  try {
    const parsed: unknown = JSON.parse(await readFile(file.path, 'utf8'));
    return isObject(parsed) ? parsed : null;
  } catch {
    throw invalidArg(`'${file.display}' is not valid JSON`);
  }
}

class OnnxModel extends BatchedModel {
  constructor(
    name: string,
    version: number,
    config: ModelConfig,
    pool: InstancePool,
    private readonly labels: Map<string, string[]>,
    private readonly ranges: InputRanges,
  ) {
    super(name, version, config, servedVariant(config), pool);
  }

  async infer(request: InferRequest, signal?: AbortSignal): Promise<InferResponse> {
    const started = performance.now();
    let validated;
    try {
      validated = validateInferRequest(this.config, request);
      // Values that index an embedding table fail a whole stacked batch in the runtime: refuse them here.
      checkInputRanges(this.ranges, validated.inputs);
    } catch (error) {
      this.batcher.stats.recordFailure(Math.round((performance.now() - started) * 1e6), 'OTHER');
      throw asConveyorError(error);
    }
    const { outputs } = await this.batcher.enqueue({ ...request, inputs: validated.inputs, outputs: validated.outputs }, signal);
    return {
      model: this.name,
      version: String(this.version),
      ...(request.id ? { id: request.id } : {}),
      outputs: outputs.map((tensor, i) => this.present(tensor, validated.outputs[i]!.parameters.classification)),
    };
  }

  /** Undo the config's reshape (the client sees dims) and apply classification if asked. */
  private present(tensor: Tensor, classification: unknown): Tensor {
    const declared = this.config.output.find((o) => o.name === tensor.name);
    const batched = this.config.max_batch_size > 0;
    let shaped = tensor;
    if (declared?.reshape) shaped = { ...tensor, shape: [...(batched ? [tensor.shape[0]!] : []), ...declared.dims] };
    if (classification === undefined) return shaped;
    return classify(shaped, Number(classification), this.labels.get(tensor.name), batched);
  }
}
