// One request of each family against the server under test, as a client sends it: a greedy
// completion (ignore_eos, so every one writes exactly `tokens`), an embedding, an image
// classification over KServe v2. Each resolves to what the quality comparison reads.

import type { ModelFamily } from '../../../models/catalog.js';
import { SeededRandom } from '../../../kernels/onnx/random.js';

export interface RequestShape {
  readonly outputTokens: number;
  /** The CNN's input shape without the batch dimension, read from model metadata. */
  readonly imageDims: readonly number[];
}

async function post(url: string, body: unknown): Promise<unknown> {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const text = await response.text();
  if (!response.ok) throw new Error(`${url}: ${response.status} ${text}`);
  return JSON.parse(text);
}

export const PROMPT = 'A precision swap should not be noticed by';
export const TEXTS = ['the encoder embeds this sentence', 'and this one, a little longer than the first', 'precision'];

/** A seeded image in [-1, 1] of the CNN's shape. */
export function image(dims: readonly number[], seed: number): number[] {
  const random = new SeededRandom(seed);
  return Array.from({ length: dims.reduce((a, b) => a * b, 1) }, () => random.next() * 2 - 1);
}

/** Sends one request; returns the completion text, the embedding or the logits. */
export async function request(http: string, family: ModelFamily, model: string, shape: RequestShape, seed = 0): Promise<string | number[]> {
  if (family === 'qwen3') {
    const body = (await post(`${http}/v1/completions`, { model, prompt: PROMPT, max_tokens: shape.outputTokens, temperature: 0, ignore_eos: true })) as { choices: { text: string }[] };
    return body.choices[0]!.text;
  }
  if (family === 'bert') {
    const body = (await post(`${http}/v1/embeddings`, { model, input: TEXTS[seed % TEXTS.length] })) as { data: { embedding: number[] }[] };
    return body.data[0]!.embedding;
  }
  const inputs = [{ name: 'input', datatype: 'FP32', shape: [1, ...shape.imageDims], data: image(shape.imageDims, seed) }];
  const body = (await post(`${http}/v2/models/${model}/infer`, { inputs })) as { outputs: { data: number[] }[] };
  return body.outputs[0]!.data;
}

export function cosine(a: readonly number[], b: readonly number[]): number {
  let [dot, na, nb] = [0, 0, 0];
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! ** 2;
    nb += b[i]! ** 2;
  }
  return dot / Math.sqrt(na * nb);
}

export function argmax(values: readonly number[]): number {
  let best = 0;
  for (let i = 1; i < values.length; i++) if (values[i]! > values[best]!) best = i;
  return best;
}
