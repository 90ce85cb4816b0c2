// The numeric helpers of the embeddings and classification tabs. Pure (no DOM).

export function cosineSimilarity(a: readonly number[], b: readonly number[]): number {
  let dot = 0;
  let normA = 0;
  let normB = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    normA += a[i]! * a[i]!;
    normB += b[i]! * b[i]!;
  }
  return normA === 0 || normB === 0 ? 0 : dot / Math.sqrt(normA * normB);
}

// ImageNet's per-channel statistics, what torchvision-style CNN exports expect.
const MEAN = [0.485, 0.456, 0.406] as const;
const STD = [0.229, 0.224, 0.225] as const;

/** RGBA pixels (canvas ImageData order) → a normalized [3, height, width] float tensor, channel-major. */
export function rgbaToChw(rgba: ArrayLike<number>, width: number, height: number): Float32Array {
  const plane = width * height;
  const out = new Float32Array(3 * plane);
  for (let pixel = 0; pixel < plane; pixel++) {
    for (let channel = 0; channel < 3; channel++) {
      out[channel * plane + pixel] = (rgba[pixel * 4 + channel]! / 255 - MEAN[channel]!) / STD[channel]!;
    }
  }
  return out;
}

export interface Label {
  readonly score: number;
  readonly index: number;
  readonly label: string;
}

/** Triton's classification strings, `score:index[:label]`. */
export function parseClassification(entries: readonly string[]): Label[] {
  return entries.map((entry) => {
    const [score = '', index = '', ...label] = entry.split(':');
    return { score: Number(score), index: Number(index), label: label.join(':') || `class ${index}` };
  });
}
