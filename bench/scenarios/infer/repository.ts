// The temporary model repository the sweep serves: every model twice, once behind the dynamic
// batcher and once without it (Triton's default scheduler: one request per execution), with the
// same instance count, so the two differ only in batching. Version directories are symlinks to
// the built models; nothing is copied.

import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { ORT_TO_CONFIG_TYPE } from '../../../src/repository/config/index.js';

export type Variant = 'batched' | 'unbatched';
export const VARIANTS: readonly Variant[] = ['batched', 'unbatched'];

export interface BatchingSettings {
  readonly maxBatchSize: number;
  readonly preferred: readonly number[];
  readonly queueDelayUs: number;
  readonly instances: number;
}

export interface TensorIo {
  readonly name: string;
  /** TYPE_* of config.pbtxt. */
  readonly dataType: string;
  /** Without the batch dimension; -1 where the model leaves a dimension free. */
  readonly dims: readonly number[];
}

export interface RepositoryModel {
  /** Family name, e.g. 'bert'; the served names are `<family>-batched` and `<family>-unbatched`. */
  readonly family: string;
  /** Built directory holding model.onnx. */
  readonly dir: string;
  readonly inputs: readonly TensorIo[];
  readonly outputs: readonly TensorIo[];
}

/**
 * The model's inputs and outputs, for the config. They must be spelled out: with a list left
 * empty the server auto-completes the config as Triton's ORT backend does, and that turns dynamic
 * batching on for a batching model, which would batch the "unbatched" variant too.
 */
export async function readModelIo(modelPath: string): Promise<Pick<RepositoryModel, 'inputs' | 'outputs'>> {
  const session = await ort.InferenceSession.create(modelPath, { logSeverityLevel: 3, intraOpNumThreads: 1 });
  try {
    const describe = (list: readonly ort.InferenceSession.ValueMetadata[]): TensorIo[] =>
      list.map((m) => {
        const tensor = m as unknown as { name: string; type: string; shape: readonly (number | string)[] };
        const dataType = ORT_TO_CONFIG_TYPE[tensor.type];
        if (!dataType) throw new Error(`${modelPath}: ${tensor.name} has type ${tensor.type}, which has no config data type`);
        return { name: tensor.name, dataType, dims: tensor.shape.slice(1).map((d) => (typeof d === 'number' && d >= 0 ? d : -1)) };
      });
    return { inputs: describe(session.inputMetadata), outputs: describe(session.outputMetadata) };
  } finally {
    await session.release();
  }
}

export function servedName(family: string, variant: Variant): string {
  return `${family}-${variant}`;
}

export function configText(name: string, variant: Variant, settings: BatchingSettings, io: Pick<RepositoryModel, 'inputs' | 'outputs'>): string {
  const tensors = (list: readonly TensorIo[]): string => list.map((t) => `  { name: "${t.name}" data_type: ${t.dataType} dims: [ ${t.dims.join(', ')} ] }`).join(',\n');
  const lines = [
    `name: "${name}"`,
    'backend: "onnxruntime"',
    `max_batch_size: ${settings.maxBatchSize}`,
    `input [\n${tensors(io.inputs)}\n]`,
    `output [\n${tensors(io.outputs)}\n]`,
    `instance_group [ { count: ${settings.instances} kind: KIND_CPU } ]`,
  ];
  if (variant === 'batched') {
    lines.push('dynamic_batching {', `  preferred_batch_size: [ ${settings.preferred.join(', ')} ]`, `  max_queue_delay_microseconds: ${settings.queueDelayUs}`, '}');
  }
  return `${lines.join('\n')}\n`;
}

export interface TempRepository {
  readonly root: string;
  remove(): Promise<void>;
}

export async function makeRepository(models: readonly RepositoryModel[], settings: BatchingSettings): Promise<TempRepository> {
  const root = await mkdtemp(join(tmpdir(), 'conveyor-bench-infer-'));
  for (const model of models) {
    for (const variant of VARIANTS) {
      const name = servedName(model.family, variant);
      await mkdir(join(root, name));
      await writeFile(join(root, name, 'config.pbtxt'), configText(name, variant, settings, model));
      await symlink(model.dir, join(root, name, '1'), 'dir');
    }
  }
  return { root, remove: () => rm(root, { recursive: true, force: true }) };
}
