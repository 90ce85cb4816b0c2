// Which models Conveyor can build, and where a built copy lives. Implementation lands with the
// decoder builder; the signature is fixed so benchmarks and tests can rely on it.

import type { Precision } from '../kernels/linear.js';
import type { ModelSize } from './common/model-files.js';

export type ModelFamily = 'qwen3' | 'bert' | 'resnet';

export interface BuiltModel {
  readonly family: ModelFamily;
  readonly size: ModelSize;
  /** The directory the builder wrote. */
  readonly dir: string;
  /** Path of the ONNX file of one variant. */
  modelPath(precision: Precision): string;
}

/** Builds the model into models/build/<family>-<size>/ unless an identical build is there. */
export async function ensureBuilt(family: ModelFamily, size: ModelSize): Promise<BuiltModel> {
  throw new Error(`ensureBuilt(${family}, ${size}): not implemented yet`);
}
