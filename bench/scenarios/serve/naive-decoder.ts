// The generation loop of the naive baseline: what someone would write from the Optimum decoder
// contract with onnxruntime-node and nothing else. One sequence, prefill then one token per
// forward pass, each pass's present.* fed back as the next past_key_values, greedy argmax.
// `num_logits_to_keep = 1` where the export has it, as any reader of the model's inputs would
// pass: without it the prefill returns a vocabulary row for every prompt token.

import * as ort from 'onnxruntime-node';

interface PastShape {
  readonly layers: number;
  readonly kvHeads: number;
  readonly headDim: number;
  readonly type: 'float32' | 'float16';
}

export class GreedyDecoder {
  private constructor(
    private readonly session: ort.InferenceSession,
    private readonly past: PastShape,
    private readonly keepsLogits: boolean,
  ) {}

  /** Same thread settings as Conveyor's engine, so the comparison is about serving, not threads. */
  static async load(modelPath: string, threads: number): Promise<GreedyDecoder> {
    const session = await ort.InferenceSession.create(modelPath, { intraOpNumThreads: threads, interOpNumThreads: 1, graphOptimizationLevel: 'all', logSeverityLevel: 3 });
    const meta = session.inputMetadata.find((m) => m.name === 'past_key_values.0.key') as unknown as { type: string; shape: readonly (number | string)[] } | undefined;
    if (!meta) throw new Error(`${modelPath} has no past_key_values.0.key input: not a decoder with a KV cache`);
    const past: PastShape = {
      layers: session.inputNames.filter((n) => n.startsWith('past_key_values.') && n.endsWith('.key')).length,
      kvHeads: Number(meta.shape[1]),
      headDim: Number(meta.shape[3]),
      type: meta.type === 'float16' ? 'float16' : 'float32',
    };
    return new GreedyDecoder(session, past, session.inputNames.includes('num_logits_to_keep'));
  }

  /**
   * Greedy tokens after `prompt`, one per forward pass, until `maxTokens`, a stop id, or
   * `cancelled()` (the client went away).
   */
  async *generate(prompt: readonly number[], maxTokens: number, stopIds: ReadonlySet<number>, cancelled: () => boolean): AsyncGenerator<number> {
    let cache = this.emptyCache();
    let ids = [...prompt];
    let length = 0;
    for (let produced = 0; produced < maxTokens && !cancelled(); produced++) {
      const { next, present } = await this.step(ids, length, cache);
      length += ids.length;
      cache = present;
      yield next;
      if (stopIds.has(next)) return;
      ids = [next];
    }
  }

  private async step(ids: readonly number[], pastLength: number, cache: Record<string, ort.Tensor>): Promise<{ next: number; present: Record<string, ort.Tensor> }> {
    const total = pastLength + ids.length;
    const int64 = (values: readonly number[]): ort.Tensor => new ort.Tensor('int64', BigInt64Array.from(values, BigInt), [1, values.length]);
    const feeds: Record<string, ort.Tensor> = {
      ...cache,
      input_ids: int64(ids),
      attention_mask: int64(new Array<number>(total).fill(1)),
      position_ids: int64(ids.map((_, i) => pastLength + i)),
    };
    if (this.keepsLogits) feeds['num_logits_to_keep'] = new ort.Tensor('int64', BigInt64Array.of(1n), []);
    const out = await this.session.run(feeds);
    const logits = out['logits']!;
    if (logits.type !== 'float32') throw new Error(`the naive server reads float32 logits, the model gives ${logits.type}`);
    const [, kept, vocab] = logits.dims as [number, number, number];
    const present: Record<string, ort.Tensor> = {};
    for (const [name, tensor] of Object.entries(out)) {
      if (name.startsWith('present.')) present[name.replace('present.', 'past_key_values.')] = tensor;
    }
    return { next: argmax(logits.data as Float32Array, (kept - 1) * vocab, vocab), present };
  }

  private emptyCache(): Record<string, ort.Tensor> {
    const { layers, kvHeads, headDim, type } = this.past;
    const cache: Record<string, ort.Tensor> = {};
    for (let i = 0; i < layers; i++) {
      for (const kind of ['key', 'value']) {
        const empty = type === 'float16' ? new Uint16Array(0) : new Float32Array(0);
        cache[`past_key_values.${i}.${kind}`] = new ort.Tensor(type, empty, [1, kvHeads, 0, headDim]);
      }
    }
    return cache;
  }

  release(): Promise<void> {
    return this.session.release();
  }
}

export function argmax(values: Float32Array, offset: number, length: number): number {
  let best = 0;
  let bestValue = values[offset]!;
  for (let i = 1; i < length; i++) {
    const v = values[offset + i]!;
    if (v > bestValue) {
      bestValue = v;
      best = i;
    }
  }
  return best;
}
