// A paged decoder's two heads over the sampled positions (models/qwen3/paged-graph.ts and the last
// segment of paged-segments.ts; kernels/greedy-tokens.ts): the logits head (`logits_indices` →
// `logits`) and, where the model has it, the greedy head (`greedy_indices` → `greedy_token_ids`,
// the argmax over ids below `sampleable_vocab`). ONNX Runtime runs both whatever is fetched, so a
// call gives its sampled positions to the head it reads and none to the other: the lm_head runs
// once either way. Reading greedy tokens instead of logits saves a batch-32 decode step the
// 19.5 MB logits copy out of ONNX Runtime (fresh pages every step) and the sampler's scan of it.

import type { StepPlan } from '../contracts/generate.js';
import type { SessionMetadata } from '../contracts/worker-messages.js';
import type { RawTensor } from '../runtime/model-session.js';
import type { LogitsRowRange } from './flat-batch.js';
import { argmax } from '../sampler/select.js';
import { toFloat32 } from './logits-rows.js';
import type { StepGreedyTokens } from './model-runner.js';
import { GREEDY_HEAD_NAMES } from './paged-layout.js';

/** Which head a call reads, and where what it reads goes: each sampled request's logits rows, or its greedy token over ids below `sampleableVocab`. */
export type SampledOutput =
  | { readonly kind: 'logits'; readonly logits: Map<string, Float32Array> }
  | { readonly kind: 'greedy'; readonly sampleableVocab: number; readonly tokens: Map<string, number[]> };
type SampledHead = Pick<SampledOutput, 'kind'> & { readonly sampleableVocab?: number };

const NO_POSITIONS: RawTensor = { type: 'int64', dims: [0], data: new BigInt64Array(0) };

export class SampledHeads {
  private constructor(
    /** False for a paged model exported before the greedy head: it has logits only. */
    readonly hasGreedy: boolean,
    private readonly vocabSize: number,
    /** The outputs a call reading each head fetches: all of the model's but the other head's, decided once. */
    private readonly fetchedFor: Readonly<Record<SampledOutput['kind'], readonly string[]>>,
  ) {}

  static of(metadata: SessionMetadata, vocabSize: number): SampledHeads {
    const names = new Set([...metadata.inputs, ...metadata.outputs].map((io) => io.name));
    const outputs = metadata.outputs.map((o) => o.name);
    return new SampledHeads(
      Object.values(GREEDY_HEAD_NAMES).every((name) => names.has(name)),
      vocabSize,
      {
        logits: outputs.filter((name) => name !== GREEDY_HEAD_NAMES.output),
        greedy: outputs.filter((name) => name !== 'logits'),
      },
    );
  }

  /** The feeds that pick the head: `positions` (flat-batch.ts's logitsIndices) to the head read, none to the other. */
  feeds(positions: RawTensor, head: SampledHead): Record<string, RawTensor> {
    if (!this.hasGreedy) return { logits_indices: positions };
    const greedy = head.kind === 'greedy';
    const sampleable = Math.min(head.sampleableVocab ?? this.vocabSize, this.vocabSize);
    return {
      logits_indices: greedy ? NO_POSITIONS : positions,
      [GREEDY_HEAD_NAMES.indicesInput]: greedy ? positions : NO_POSITIONS,
      [GREEDY_HEAD_NAMES.sampleableInput]: { type: 'int64', dims: [1], data: BigInt64Array.of(BigInt(sampleable)) },
    };
  }

  /** The outputs a call fetches: all of the model's but the head it does not read. */
  fetched(head: SampledHead): readonly string[] {
    return this.fetchedFor[head.kind];
  }

  /**
   * What the head `head` reads, as the model's outputs would hold it, from `logits` [rows, vocab]
   * of the sampled positions computed outside the model (the native layer ops' last segment): the
   * logits, or each row's greedy token, the first maximum over ids below the sampleable vocab
   * (the sampler's argmax, the model's ArgMax rule; NaN never wins).
   */
  outputsOf(logits: Float32Array, head: SampledHead): Record<string, RawTensor> {
    const rows = logits.length / this.vocabSize;
    if (head.kind === 'logits') return { logits: { type: 'float32', dims: [rows, this.vocabSize], data: logits } };
    const sampleable = Math.min(head.sampleableVocab ?? this.vocabSize, this.vocabSize);
    const ids = BigInt64Array.from({ length: rows }, (_, row) => BigInt(argmax(logits.subarray(row * this.vocabSize), sampleable)));
    return { [GREEDY_HEAD_NAMES.output]: { type: 'int64', dims: [rows], data: ids } };
  }

  /** Hands each sampled request what its head computed: logits rows as float32 (logits-rows.ts), or the greedy token of each row. */
  read(outputs: Readonly<Record<string, RawTensor>>, rows: readonly LogitsRowRange[], into: SampledOutput): void {
    if (into.kind === 'greedy') {
      const ids = outputs[GREEDY_HEAD_NAMES.output]!.data as BigInt64Array;
      for (const { requestId, first, count } of rows) {
        const tokens: number[] = [];
        for (let k = first; k < first + count; k++) tokens.push(Number(ids[k]!));
        into.tokens.set(requestId, tokens);
      }
      return;
    }
    const tensor = outputs['logits']!;
    for (const { requestId, first, count } of rows) into.logits.set(requestId, toFloat32(tensor, first * this.vocabSize, count * this.vocabSize));
  }
}

/** A runner's ModelRunner.executeGreedy where its model has the greedy head (else undefined): the runner's own pass over the plan, reading the greedy tokens. */
export function greedyExecution(
  heads: SampledHeads,
  run: (plan: StepPlan, sampled: SampledOutput) => Promise<void>,
): ((plan: StepPlan, sampleableVocab: number) => Promise<StepGreedyTokens>) | undefined {
  if (!heads.hasGreedy) return undefined;
  return async (plan, sampleableVocab) => {
    const tokens = new Map<string, number[]>();
    await run(plan, { kind: 'greedy', sampleableVocab, tokens });
    return tokens;
  };
}
