// Shapes of the ResNet-style classifiers Conveyor builds. The graph always takes ImageNet-sized
// input (float32 [batch_size, 3, 224, 224], normalized with the ImageNet mean/std) and returns
// 1000 logits, so the tiny test model and the bench model are interchangeable behind one config.

import type { ModelSize } from '../common/model-files.js';

export interface ResnetConfig {
  /** Output channels of the 7×7 stem convolution. */
  readonly stemWidth: number;
  /** Channels of each of the four stages; stages 2–4 halve the resolution. */
  readonly widths: readonly number[];
  readonly blocksPerStage: readonly number[];
  readonly imageSize: number;
  readonly numClasses: number;
  /** Synthetic images the builder pushes through the float64 reference to set BatchNorm statistics. */
  readonly calibrationImages: number;
}

export const RESNET_CONFIGS: Record<ModelSize, ResnetConfig> = {
  tiny: { stemWidth: 8, widths: [8, 16, 32, 64], blocksPerStage: [1, 1, 1, 1], imageSize: 224, numClasses: 1000, calibrationImages: 4 },
  // torchvision's resnet18 shape: 11.7M parameters.
  bench: { stemWidth: 64, widths: [64, 128, 256, 512], blocksPerStage: [2, 2, 2, 2], imageSize: 224, numClasses: 1000, calibrationImages: 2 },
};

export const DEFAULT_RESNET_SEED = 20_261_130;

// torchvision's normalization; pixels in [0, 1] map into roughly [-2.1, 2.6].
export const IMAGENET_MEAN = [0.485, 0.456, 0.406] as const;
export const IMAGENET_STD = [0.229, 0.224, 0.225] as const;
