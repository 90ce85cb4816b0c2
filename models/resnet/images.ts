// Synthetic input images, normalized the way torchvision normalizes ImageNet images. Pure noise
// would make every image statistically the same, so after global average pooling a classifier
// could hardly tell them apart and tiny numeric differences (fp16, int8) would flip its answer.
// These have what separates real photos instead: a colour cast, large smooth shapes (a coarse
// random grid, bilinearly upsampled) and some fine texture. Only +, ×, ÷: bit-identical anywhere.

import { SeededRandom } from '../../kernels/onnx/random.js';
import { IMAGENET_MEAN, IMAGENET_STD } from './config.js';

const GRID = 8;

/** `count` images as one float32 [count, 3, size, size] tensor. */
export function syntheticImages(seed: number, count: number, size = 224): Float32Array {
  const random = new SeededRandom(seed);
  const plane = size * size;
  const out = new Float32Array(count * 3 * plane);
  for (let n = 0; n < count; n++) {
    for (let c = 0; c < 3; c++) {
      const pixels = syntheticPlane(random, size);
      const base = (n * 3 + c) * plane;
      for (let i = 0; i < plane; i++) out[base + i] = (pixels[i]! - IMAGENET_MEAN[c]!) / IMAGENET_STD[c]!;
    }
  }
  return out;
}

/** One colour channel, pixel values in [0, 1]. */
function syntheticPlane(random: SeededRandom, size: number): Float64Array {
  const cast = 0.4 + 0.2 * random.next();
  const contrast = 0.05 + 0.1 * random.next();
  const texture = 0.2 + 0.2 * random.next();
  const grid = Float64Array.from({ length: (GRID + 1) * (GRID + 1) }, () => random.next() * 2 - 1);
  const out = new Float64Array(size * size);
  for (let y = 0; y < size; y++) {
    const gy = (y / size) * GRID;
    const [y0, fy] = [Math.floor(gy), gy - Math.floor(gy)];
    for (let x = 0; x < size; x++) {
      const gx = (x / size) * GRID;
      const [x0, fx] = [Math.floor(gx), gx - Math.floor(gx)];
      const at = (dy: number, dx: number) => grid[(y0 + dy) * (GRID + 1) + x0 + dx]!;
      const smooth = (at(0, 0) * (1 - fx) + at(0, 1) * fx) * (1 - fy) + (at(1, 0) * (1 - fx) + at(1, 1) * fx) * fy;
      const value = cast + contrast * smooth + texture * (random.next() * 2 - 1);
      out[y * size + x] = Math.min(1, Math.max(0, value));
    }
  }
  return out;
}

/** The smallest and largest value a normalized image can hold, whatever its content. */
export function normalizedPixelRange(): { min: number; max: number } {
  const lows = IMAGENET_MEAN.map((m, c) => (0 - m) / IMAGENET_STD[c]!);
  const highs = IMAGENET_MEAN.map((m, c) => (1 - m) / IMAGENET_STD[c]!);
  return { min: Math.min(...lows), max: Math.max(...highs) };
}
