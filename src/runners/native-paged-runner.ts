// NativePagedRunner: runs a StepPlan on the segmented paged decoder (onnx/model_paged*.segments/,
// contract in models/qwen3/paged-segments.ts) with attention computed between the segments by the
// native kernel (src/runtime/paged-attention-kernel.ts) straight from the block pool. ONNX Runtime
// runs the projections, norms and MLPs of all the step's tokens flat (no padding anywhere, so the
// whole plan is one pass: numLayers + 1 session calls); per layer the kernel writes the new K/V
// into their blocks and attends over each sequence's pool positions in place, so no step copies
// past K/V proportional to the context, in JS or in ORT. Same pool layout and block bookkeeping as
// the PagedRunner's, so the engine, scheduler and block manager cannot tell the two apart.
// A layer with a sliding window (its q/k/v segment's conveyor.sliding_window metadata) has the
// kernel attend over that window only, skipping the blocks wholly before it. On steps of at most
// NATIVE_LAYER_MAX_ROWS tokens the inner segments run on the kernel's layer ops instead
// (native-layers.ts), and the first and last where their wiring allows: then no ORT call at all.

import { availableParallelism } from 'node:os';
import type { KvCacheDtype, KvElementType } from '../contracts/engine-messages.js';
import type { ScheduledRequest, StepPlan } from '../contracts/generate.js';
import { SLIDING_WINDOW_PROPERTY } from '../contracts/paged-segments.js';
import { invalidArg } from '../errors.js';
import type { ModelSession, RawTensor } from '../runtime/model-session.js';
import type { ActivationType, KernelLayout, KernelShape, PagedAttentionKernel } from '../runtime/paged-attention-kernel.js';
import type { KvArray } from './kv-storage.js';
import { flatBatch, type LogitsRowRange } from './flat-batch.js';
import { greedyExecution, type SampledOutput, SampledHeads } from './greedy-head.js';
import { blocksForBudget, type KvBudget, type ModelRunner, type ModelShape, type RunnerInfo, type RunnerStats, runnerInfo, type StepGreedyTokens } from './model-runner.js';
import { PagedKvStorage } from './paged-kv-storage.js';
import { StepTimer } from './step-timer.js';
import { type InnerSegmentOutput, NATIVE_LAYER_MAX_ROWS, type NativeLayers } from './native-layers.js';

type LogitsRows = Map<string, Float32Array>;

/** The pool's element type for each kv_cache_dtype (auto: the segments' own). */
const POOL_TYPE: Readonly<Record<KvCacheDtype, KvElementType | undefined>> = { auto: undefined, fp16: 'float16', int8: 'int8' };

/** The model facts the segments' I/O declare: segment 0's query/key outputs, the last one's logits; and each layer's sliding window (0: none) from its segment's metadata. */
export function segmentedLayoutFrom(segments: readonly ModelSession[]): ModelShape & { numHeads: number; slidingWindows: readonly number[] } {
  if (segments.length < 2) throw invalidArg(`a segmented paged decoder has at least 2 segments, found ${segments.length}`);
  const output = (segment: ModelSession, name: string) => {
    const found = segment.metadata.outputs.find((o) => o.name === name);
    if (!found) throw invalidArg(`not a segmented paged decoder: output '${name}' is missing`);
    return found;
  };
  const [query, key] = [output(segments[0]!, 'query'), output(segments[0]!, 'key')];
  const [, numHeads, headDim] = query.shape;
  const [, numKvHeads] = key.shape;
  const vocab = output(segments.at(-1)!, 'logits').shape[1];
  for (const size of [numHeads, numKvHeads, headDim, vocab]) {
    if (typeof size !== 'number') throw invalidArg('a segmented paged decoder needs fixed head, kv-head, head-dim and vocab sizes');
  }
  if (key.type !== 'float32' && key.type !== 'float16') throw invalidArg(`key of type ${key.type} is not supported`);
  const slidingWindows = segments.slice(0, -1).map((segment, layer) => {
    const text = segment.metadata.properties?.[SLIDING_WINDOW_PROPERTY];
    const window = text === undefined ? 0 : Number(text);
    if (!Number.isInteger(window) || window < 0 || window > 2 ** 31 - 1) throw invalidArg(`segment ${layer}: ${SLIDING_WINDOW_PROPERTY} '${text}' is not a window size`);
    return window;
  });
  return { numLayers: segments.length - 1, numHeads: numHeads as number, numKvHeads: numKvHeads as number, headDim: headDim as number, vocabSize: vocab as number, kvType: key.type, slidingWindows };
}

export class NativePagedRunner implements ModelRunner {
  private readonly timer = new StepTimer();
  readonly stats: RunnerStats = this.timer.stats;
  readonly info: RunnerInfo;
  private readonly threads: number;
  private readonly heads: SampledHeads;
  readonly executeGreedy?: (plan: StepPlan, sampleableVocab: number) => Promise<StepGreedyTokens>;

  constructor(
    private readonly segments: readonly ModelSession[],
    /** kvType: the pool's; activationType: the segments' float type (query, attention output, fresh K/V); slidingWindows: per layer, 0 = full causal attention. */
    private readonly shape: ModelShape & { numHeads: number; activationType: ActivationType; slidingWindows?: readonly number[] },
    private readonly pool: PagedKvStorage,
    private readonly kernel: PagedAttentionKernel,
    intraOpNumThreads: number,
    /** Segments 1 .. numLayers − 1 by the kernel's layer ops on steps of few rows (native-layers.ts); absent: always ORT. */
    private readonly layers?: NativeLayers,
  ) {
    this.info = runnerInfo('paged-native', shape, pool, segments[0]!);
    if (process.env['CONVEYOR_KV_HUGE_PAGES'] !== '0') for (const array of [...pool.keys, ...pool.values]) kernel.adviseHugePages(array);
    // The kernel runs while ORT's threads wait between segments: as many threads as ORT uses.
    this.threads = intraOpNumThreads > 0 ? intraOpNumThreads : availableParallelism();
    this.heads = SampledHeads.of(segments.at(-1)!.metadata, shape.vocabSize);
    this.executeGreedy = greedyExecution(this.heads, (plan, sampled) => this.run(plan, sampled));
  }

  /** kvCacheDtype fp16 / int8 keeps the pool in that type whatever the segments' float type: a half / about a quarter of a float32 pool's bytes to read and store per position. */
  static forSegments(
    segments: readonly ModelSession[],
    kernel: PagedAttentionKernel,
    options: KvBudget & { intraOpNumThreads: number; kvCacheDtype?: KvCacheDtype | undefined; nativeLayers?: NativeLayers | undefined },
  ): NativePagedRunner {
    const model = segmentedLayoutFrom(segments);
    const shape = { ...model, activationType: model.kvType as ActivationType, kvType: POOL_TYPE[options.kvCacheDtype ?? 'auto'] ?? model.kvType };
    // The kernel keeps an int8 K block's codes in quads of dimensions; refused here, at load, rather than at the first step.
    if (shape.kvType === 'int8' && shape.headDim % 4 !== 0) throw invalidArg(`kv_cache_dtype int8 needs a head size that is a multiple of 4, this model's is ${shape.headDim}`);
    const pool = new PagedKvStorage(shape, blocksForBudget(shape, options), options.blockSize);
    return new NativePagedRunner(segments, shape, pool, kernel, options.intraOpNumThreads, options.nativeLayers);
  }

  async release(): Promise<void> {
    await Promise.all(this.segments.map((s) => s.release()));
  }

  async execute(plan: StepPlan): Promise<LogitsRows> {
    const logits: LogitsRows = new Map();
    await this.run(plan, { kind: 'logits', logits });
    return logits;
  }

  private async run(plan: StepPlan, sampled: SampledOutput): Promise<void> {
    for (const [source, destination] of plan.blocksToCopy) this.pool.copyBlock(source, destination);
    this.timer.beginStep();
    if (plan.scheduled.length > 0) await this.runCall(plan.scheduled, sampled);
  }

  private async runCall(rows: readonly ScheduledRequest[], sampled: SampledOutput): Promise<void> {
    const { numLayers, numHeads, headDim, activationType } = this.shape;
    const { tokens, layout, kernelShape, logitsRows } = this.timer.timed('feedsMs', () => this.callLayout(rows));
    const numTokens = tokens.input_ids.data.length;
    // One output buffer for every layer's attention: each segment's run has returned before the next layer's kernel writes it again.
    const attention = activationType === 'float16' ? new Uint16Array(numTokens * numHeads * headDim) : new Float32Array(numTokens * numHeads * headDim);
    // A step of a few rows runs the inner segments with the kernel's layer ops (native-layers.ts), the first and last too where they can.
    const native = this.layers && numTokens <= NATIVE_LAYER_MAX_ROWS ? this.layers : undefined;
    const positions = tokens.position_ids.data as BigInt64Array;
    let out: Readonly<Record<string, RawTensor>> = native?.hasFirst
      ? this.timer.timed('layersMs', () => innerSegmentTensors(native.first(tokens.input_ids.data as BigInt64Array, positions), numTokens))
      : await this.timer.call(() => this.segments[0]!.run(tokens));
    for (let layer = 0; layer < numLayers; layer++) {
      const { hidden, query, key, value } = out as Record<'hidden' | 'query' | 'key' | 'value', RawTensor>;
      const [keys, values] = [this.pool.keys[layer]!, this.pool.values[layer]!];
      this.timer.timed('scatterMs', () => this.kernel.write(kernelShape, layout, key.data as KvArray, value.data as KvArray, keys, values));
      const window = this.shape.slidingWindows?.[layer] ?? 0;
      const layerShape = window > 0 ? { ...kernelShape, slidingWindow: window } : kernelShape;
      this.timer.timed('attentionMs', () => this.kernel.attend(layerShape, layout, query.data as KvArray, keys, values, attention, this.threads));
      const last = layer === numLayers - 1;
      if (native && last && native.hasHead) {
        const logits = this.timer.timed('layersMs', () => native.head(hidden.data as Float32Array, attention as Float32Array, numTokens, tokens.logits_indices.data as BigInt64Array));
        out = this.heads.outputsOf(logits, sampled);
        continue;
      }
      if (native && !last) {
        out = this.timer.timed('layersMs', () => innerSegmentTensors(native.run(layer + 1, hidden.data as Float32Array, attention as Float32Array, positions, numTokens), numTokens));
        continue;
      }
      const feeds: Record<string, RawTensor> = {
        residual: hidden,
        attention: { type: activationType, dims: [numTokens, numHeads * headDim], data: attention },
        ...(last ? this.heads.feeds(tokens.logits_indices, sampled) : { position_ids: tokens.position_ids }),
      };
      const segment = this.segments[layer + 1]!;
      out = await this.timer.call(() => (last ? segment.run(feeds, this.heads.fetched(sampled)) : segment.run(feeds)));
    }
    this.timer.timed('logitsMs', () => this.heads.read(out, logitsRows, sampled));
  }

  /** The flat token feeds (flat-batch.ts) and the kernel's layout: block tables covering each row's new positions too, which the kernel writes. */
  private callLayout(rows: readonly ScheduledRequest[]): {
    tokens: { input_ids: RawTensor; position_ids: RawTensor; logits_indices: RawTensor };
    layout: KernelLayout;
    kernelShape: KernelShape;
    logitsRows: readonly LogitsRowRange[];
  } {
    const batch = flatBatch(rows);
    const blockSize = this.pool.blockSize;
    const maxBlocks = Math.max(1, ...rows.map((r) => Math.ceil((r.numComputedTokens + r.tokenIds.length) / blockSize)));
    const layout: KernelLayout = {
      blockTables: new Int32Array(rows.length * maxBlocks),
      queryStarts: Int32Array.from(batch.starts),
      queryLengths: Int32Array.from(rows, (r) => r.tokenIds.length),
      pastLengths: Int32Array.from(rows, (r) => r.numComputedTokens),
    };
    rows.forEach((r, s) => {
      const blocks = Math.ceil((r.numComputedTokens + r.tokenIds.length) / blockSize);
      for (let b = 0; b < blocks; b++) layout.blockTables[s * maxBlocks + b] = r.blockTable[b]!;
    });
    const { numHeads, numKvHeads, headDim, activationType, kvType } = this.shape;
    const kernelShape: KernelShape = { numSeqs: rows.length, numHeads, numKvHeads, headDim, numBlocks: this.pool.numBlocks, blockSize, maxBlocks, activationType, kvType };
    return { tokens: { input_ids: batch.inputIds, position_ids: batch.positionIds, logits_indices: batch.logitsIndices }, layout, kernelShape, logitsRows: batch.logitsRows };
  }
}

/** The native layers' outputs as the segment session's would be. */
function innerSegmentTensors(output: InnerSegmentOutput, rows: number): Record<keyof InnerSegmentOutput, RawTensor> {
  const tensor = (data: Float32Array): RawTensor => ({ type: 'float32', dims: [rows, data.length / rows], data });
  return { hidden: tensor(output.hidden), query: tensor(output.query), key: tensor(output.key), value: tensor(output.value) };
}
