// Opens a model and picks the runner adapter from its I/O names (ARCHITECTURE.md, "Runners"):
// the engine asks for a ModelRunner and never learns which one it got. Each contract (the Optimum
// decoder's past_key_values, the paged-attention graph's block pools) is one entry in
// RUNNER_CONTRACTS and one case in adapterFor, nothing in the engine.

import type { StepPlan } from '../contracts/generate.js';
import type { FaultInjection, SessionMetadata } from '../contracts/worker-messages.js';
import { ConveyorError, invalidArg } from '../errors.js';
import { FaultPoint } from '../threads/fault-injection.js';
import { ModelSession } from '../runtime/model-session.js';
import { loadPagedAttentionKernel, type PagedAttentionKernel } from '../runtime/paged-attention-kernel.js';
import { pagedFileOfSegments, SEGMENT_FILE } from '../contracts/paged-segments.js';
import { readdir, stat } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import type { ModelRunner, RunnerInfo, RunnerKind, RunnerOptions, RunnerStats, StepGreedyTokens, StepLogits } from './model-runner.js';
import { PAGED_TOKEN_INPUTS } from './paged-layout.js';
import { PagedRunner } from './paged-runner.js';
import { NATIVE_LAYER_MAX_ROWS, NativeLayers, type NativeLayersAvailability } from './native-layers.js';
import { NativePagedRunner, segmentedLayoutFrom } from './native-paged-runner.js';
import { PastKeyValuesRunner } from './past-key-values-runner.js';

/** Names of a model's inputs and outputs, which is all the choice looks at. */
export interface ModelIoNames {
  readonly inputs: readonly string[];
  readonly outputs: readonly string[];
}

/** The runners of one session; the NativePagedRunner opens a segments directory instead. */
type SingleSessionKind = Exclude<RunnerKind, 'paged-native'>;

interface RunnerContract {
  readonly kind: SingleSessionKind;
  /** For the error that lists what is supported. */
  readonly description: string;
  readonly inputs: readonly string[];
  readonly outputs: readonly string[];
}

/** Tried in order; the first contract whose names a model has all of picks its runner. */
export const RUNNER_CONTRACTS: readonly RunnerContract[] = [
  {
    kind: 'past-key-values',
    description: 'an Optimum decoder with past_key_values (PastKeyValuesRunner)',
    inputs: ['input_ids', 'attention_mask', 'past_key_values.0.key', 'past_key_values.0.value'],
    outputs: ['logits', 'present.0.key', 'present.0.value'],
  },
  {
    kind: 'paged',
    description: 'a paged-attention decoder reading the block pool (PagedRunner)',
    inputs: [...PAGED_TOKEN_INPUTS, 'key_cache.0', 'value_cache.0'],
    outputs: ['logits', 'new_key.0', 'new_value.0'],
  },
];

/** The runner for a model with these I/O names; an UNSUPPORTED error naming what was found otherwise. */
export function chooseRunner(names: ModelIoNames): SingleSessionKind {
  const has = (available: readonly string[], wanted: readonly string[]) => wanted.filter((name) => !available.includes(name));
  const misses = RUNNER_CONTRACTS.map((contract) => ({ contract, missing: [...has(names.inputs, contract.inputs), ...has(names.outputs, contract.outputs)] }));
  const match = misses.find((m) => m.missing.length === 0);
  if (match) return match.contract.kind;
  const supported = misses.map((m) => `${m.contract.description}, which needs ${m.missing.join(', ')}`).join('; ');
  throw new ConveyorError('UNSUPPORTED', `no runner for this model: inputs [${summarize(names.inputs)}], outputs [${summarize(names.outputs)}]; supported: ${supported}`);
}

/**
 * Per-layer names collapse to one entry (past_key_values.{i}.key), so a 32-layer model's error
 * stays readable.
 */
function summarize(names: readonly string[]): string {
  return [...new Set(names.map((name) => name.replace(/\.\d+(?=\.|$)/g, '.{i}')))].join(', ');
}

export function ioNamesOf(metadata: SessionMetadata): ModelIoNames {
  return { inputs: metadata.inputs.map((i) => i.name), outputs: metadata.outputs.map((o) => o.name) };
}

/**
 * Opens the model's session and the runner its inputs call for, with KV storage sized from the
 * budget. A segmented paged decoder (a model_paged*.segments directory) gets the NativePagedRunner
 * where the native kernel loads, and otherwise the paged graph it was cut from, with the reason in
 * the runner's note.
 */
export async function openModelRunner(options: RunnerOptions): Promise<ModelRunner> {
  const runner = await openRunner(options);
  // A draft_pass fault is the draft model's runner's (src/engine-worker/main.ts), never the target's.
  return options.faultInjection?.at === 'step' ? withFaultInjection(runner, options.faultInjection) : runner;
}

/** TEST-ONLY: the runner, throwing or exiting at its `fault.count`-th model call (FaultInjectingRunner). */
export function withFaultInjection(runner: ModelRunner, fault: FaultInjection): ModelRunner {
  return new FaultInjectingRunner(runner, new FaultPoint(fault));
}

async function openRunner(options: RunnerOptions): Promise<ModelRunner> {
  const { device } = options;
  const cutFrom = pagedFileOfSegments(options.modelPath);
  if (cutFrom !== null) {
    const availability = device === 'cpu' ? await loadPagedAttentionKernel() : { unavailable: 'the native kernel runs on the CPU only' };
    if ('kernel' in availability) return openSegmented(options, availability.kernel);
    const runner = await openSingleSession({ ...options, modelPath: cutFrom });
    return withNote(runner, `native paged attention unavailable (${availability.unavailable}); running the paged graph's ONNX attention`);
  }
  return openSingleSession(options);
}

async function openSingleSession(options: RunnerOptions): Promise<ModelRunner> {
  const { modelPath, device, intraOpNumThreads, intraOpSpinning } = options;
  const session = await ModelSession.open({ modelPath, device, intraOpNumThreads, intraOpSpinning });
  try {
    const runner = adapterFor(chooseRunner(ioNamesOf(session.metadata)), session, options);
    // A graph's KV tensors have the model's float type: a cache of another type would mean casting the whole past every step.
    const { kvCacheDtype = 'auto' } = options;
    if ((kvCacheDtype === 'fp16' && runner.info.shape.kvType !== 'float16') || kvCacheDtype === 'int8') {
      throw invalidArg(`kv_cache_dtype ${kvCacheDtype} on a ${runner.info.shape.kvType} model needs attention_backend paged with the segmented decoder and the native kernel`);
    }
    return runner;
  } catch (error) {
    await session.release();
    throw error;
  }
}

/**
 * Weights (bytes of a segments directory's files) up to which the segments' sessions run on one
 * intra-op thread whatever intraOpNumThreads asks. A model this small does each op of a step in
 * microseconds, less than waking a second thread costs; ONNX Runtime still splits an op once its
 * rows pass its own threshold, so a speculative verify step (5 positions) of llama2.c's
 * stories260K (1.1 MB) woke the pool where a decode step did not, and on a busy 2-core machine
 * each wake waited for a core: 3-27 ms against 0.46 ms on one thread (medians, load 13; bench
 * results 2026-12-06-spec-ngram-stories260k-*). The kernel keeps intraOpNumThreads; its own
 * threshold (PARALLEL_MIN_COST) already runs small calls on the calling thread.
 */
export const SINGLE_THREAD_MODEL_BYTES = 4 << 20;

async function openSegmented(options: RunnerOptions, kernel: PagedAttentionKernel): Promise<ModelRunner> {
  const { modelPath, device, intraOpSpinning } = options;
  const names = await readdir(modelPath);
  const files = names.filter((name) => SEGMENT_FILE.test(name)).sort((a, b) => Number(a.match(/\d+/)![0]) - Number(b.match(/\d+/)![0]));
  const bytes = (await Promise.all(names.map((name) => stat(join(modelPath, name))))).reduce((sum, s) => sum + (s.isFile() ? s.size : 0), 0);
  const small = bytes <= SINGLE_THREAD_MODEL_BYTES && options.intraOpNumThreads !== 1;
  const intraOpNumThreads = small ? 1 : options.intraOpNumThreads;
  const segments: ModelSession[] = [];
  try {
    // One at a time: each session's load peaks at its own weights, not all of them at once.
    for (const file of files) segments.push(await ModelSession.open({ modelPath: join(modelPath, file), device, intraOpNumThreads, intraOpSpinning }));
    const layers = openNativeLayers(
      kernel,
      segments,
      files.map((file) => join(modelPath, file)),
      options.intraOpNumThreads,
    );
    const runner = NativePagedRunner.forSegments(segments, kernel, { ...options, nativeLayers: 'layers' in layers ? layers.layers : undefined });
    const notes = [
      'layers' in layers ? layersNote(layers.layers, files.length) : `layer ops unavailable (${layers.unavailable})`,
      ...(small ? [`ONNX Runtime on 1 intra-op thread: ${(bytes / 2 ** 20).toFixed(1)} MiB of weights make each op shorter than waking a second thread`] : []),
    ];
    return withNote(runner, notes.join('; '));
  } catch (error) {
    await Promise.all(segments.map((s) => s.release()));
    throw error;
  }
}

function layersNote(layers: NativeLayers, segments: number): string {
  const ends = layers.endsUnavailable ?? 'segment 0 and the last segment (final norm, lm_head) too';
  return `layers 1..${segments - 2} by the kernel's layer ops at up to ${NATIVE_LAYER_MAX_ROWS} rows, ${ends} (${(layers.packedBytes / 2 ** 20).toFixed(0)} MiB packed)`;
}

/** The inner segments by the kernel's layer ops (native-layers.ts), or why not; CONVEYOR_NATIVE_LAYERS=0 keeps them in ONNX Runtime (the A/B baseline). */
function openNativeLayers(kernel: PagedAttentionKernel, segments: readonly ModelSession[], paths: readonly string[], intraOpNumThreads: number): NativeLayersAvailability {
  if (process.env['CONVEYOR_NATIVE_LAYERS'] === '0') return { unavailable: 'CONVEYOR_NATIVE_LAYERS=0' };
  const { numHeads, numKvHeads, headDim, kvType } = segmentedLayoutFrom(segments);
  if (kvType !== 'float32') return { unavailable: `${kvType} activations` };
  const threads = intraOpNumThreads > 0 ? intraOpNumThreads : availableParallelism();
  return NativeLayers.open(
    kernel.layerOps,
    paths,
    segments.map((segment) => segment.metadata.properties),
    { numHeads, numKvHeads, headDim },
    threads,
  );
}

function withNote(runner: ModelRunner, note: string): ModelRunner {
  return new NotedRunner(runner, runner.info.note ? `${runner.info.note}; ${note}` : note);
}

/** A runner whose info carries why it is not the one asked for. */
class NotedRunner implements ModelRunner {
  readonly info: RunnerInfo;
  readonly executeGreedy?: (plan: StepPlan, sampleableVocab: number) => Promise<StepGreedyTokens>;

  constructor(
    private readonly runner: ModelRunner,
    note: string,
  ) {
    this.info = { ...runner.info, note };
    if (runner.executeGreedy) this.executeGreedy = (plan, sampleableVocab) => runner.executeGreedy!(plan, sampleableVocab);
  }

  get stats(): Readonly<RunnerStats> {
    return this.runner.stats;
  }

  execute(plan: StepPlan): Promise<StepLogits> {
    return this.runner.execute(plan);
  }

  release(): Promise<void> {
    return this.runner.release();
  }
}

function adapterFor(kind: SingleSessionKind, session: ModelSession, options: RunnerOptions): ModelRunner {
  switch (kind) {
    case 'past-key-values':
      return PastKeyValuesRunner.forSession(session, options);
    case 'paged':
      return PagedRunner.forSession(session, options);
  }
}

/**
 * TEST-ONLY (src/threads/fault-injection.ts): throws or exits at the configured execution, as
 * an instance worker does at its model execution, so supervision tests can kill an engine
 * mid-stream. The engine calls the target's runner once per step that has rows to run, so the N
 * of `throw_at_step:N` still counts engine steps; a draft model's runner is called once per pass
 * (`throw_at_draft_pass:N`), several a step.
 */
class FaultInjectingRunner implements ModelRunner {
  readonly executeGreedy?: (plan: StepPlan, sampleableVocab: number) => Promise<StepGreedyTokens>;

  constructor(
    private readonly runner: ModelRunner,
    private readonly fault: FaultPoint,
  ) {
    if (runner.executeGreedy) {
      this.executeGreedy = async (plan, sampleableVocab) => {
        this.fault.reached();
        return runner.executeGreedy!(plan, sampleableVocab);
      };
    }
  }

  get info(): RunnerInfo {
    return this.runner.info;
  }

  get stats(): Readonly<RunnerStats> {
    return this.runner.stats;
  }

  async execute(plan: StepPlan): Promise<StepLogits> {
    this.fault.reached();
    return this.runner.execute(plan);
  }

  release(): Promise<void> {
    return this.runner.release();
  }
}
