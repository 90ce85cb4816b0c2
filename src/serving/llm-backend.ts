// The "llm" backend: a Hugging Face ONNX decoder directory served by one engine worker
// (continuous batching over a paged KV cache). Text lives here, on the main thread: the input
// processor validates and tokenizes before anything is scheduled, the output processor turns
// step updates into text events.

import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import type { InferRequest, InferResponse } from '../contracts/infer.js';
import type { ModelConfig } from '../contracts/model-config.js';
import { ModelStatsRecorder } from '../batcher/stats.js';
import { EngineClient } from '../engine/engine-client.js';
import { InputProcessor, type ProcessInput, type ProcessedRequest } from '../engine/input-processor.js';
import { OutputProcessor, type GenerationEvent } from '../engine/output-processor.js';
import { ConveyorError, invalidArg, unavailable } from '../errors.js';
import { finishedRequest, NO_LLM_METRICS, type FinishedRequest, type LlmMetricsObserver } from '../metrics/index.js';
import type { SequenceUpdate } from '../contracts/generate.js';
import type { BackendLoadRequest, ServedModel } from './served-model.js';

const VARIANT_FILES: Record<string, string> = { fp32: 'model.onnx', fp16: 'model_fp16.onnx', int8: 'model_quantized.onnx' };

/** A generation request before tokenization: the prompt and raw sampling values of any front end. */
export type GenerateInput = Omit<ProcessInput, 'id' | 'arrivalTimeMs'>;

function parameter(config: ModelConfig, key: string): string | undefined {
  return config.parameters[key]?.string_value;
}

function positiveInt(config: ModelConfig, key: string, fallback: number): number {
  const raw = parameter(config, key);
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) throw invalidArg(`parameter ${key} must be a positive integer, got '${raw}'`);
  return value;
}

export async function loadLlmModel(request: BackendLoadRequest): Promise<LlmModel> {
  const { config, versionDir } = request;
  const precision = parameter(config, 'precision') ?? 'fp32';
  const file = VARIANT_FILES[precision];
  if (!file) throw invalidArg(`parameter precision must be one of ${Object.keys(VARIANT_FILES).join(', ')}, got '${precision}'`);
  const modelPath = join(versionDir, 'onnx', file);
  if (!existsSync(modelPath)) throw invalidArg(`model file ${modelPath} not found`);
  const maxModelLen = parameter(config, 'max_model_len');
  const processor = await InputProcessor.load(versionDir, maxModelLen ? { maxModelLen: positiveInt(config, 'max_model_len', 1) } : {});
  const engine = await EngineClient.start(
    {
      modelPath,
      device: config.instance_group.some((g) => g.kind === 'KIND_GPU') || parameter(config, 'device') === 'cuda' ? 'cuda' : 'cpu',
      intraOpNumThreads: positiveInt(config, 'intra_op_thread_count', availableParallelism()),
      maxNumSeqs: positiveInt(config, 'max_num_seqs', 32),
      maxNumBatchedTokens: positiveInt(config, 'max_num_batched_tokens', 512),
      maxModelLen: processor.info.contextLength,
      blockSize: positiveInt(config, 'block_size', 16),
      kvCacheBytes: positiveInt(config, 'kv_cache_bytes', 256 * 2 ** 20),
      enablePrefixCaching: parameter(config, 'enable_prefix_caching') !== 'false',
      sampleableVocabSize: processor.info.vocabSize,
    },
    (line) => request.log(`${request.name}:${request.version}: ${line}`),
  );
  const metrics = request.llmMetrics ?? NO_LLM_METRICS;
  engine.onStep((output) => metrics.observeStep(request.name, output));
  return new LlmModel(request.name, request.version, config, processor, engine, metrics, request.log);
}

export class LlmModel implements ServedModel {
  private readonly stats: ModelStatsRecorder;
  private accepting = true;
  private active = 0;
  private idle?: () => void;
  /** Engine request ids of the generations now streaming (the ones abortInFlight ends). */
  private readonly streaming = new Set<string>();
  /** Set once the server ends the generations still running; they then fail with it. */
  private serverAbort?: ConveyorError;

  constructor(
    readonly name: string,
    readonly version: number,
    readonly config: ModelConfig,
    readonly processor: InputProcessor,
    readonly engine: EngineClient,
    private readonly metrics: LlmMetricsObserver = NO_LLM_METRICS,
    private readonly log: (line: string, fields?: Record<string, unknown>) => void = () => {},
  ) {
    this.stats = new ModelStatsRecorder(name, String(version));
  }

  /** Validates and tokenizes; throws INVALID_ARG / CONTEXT_LENGTH_EXCEEDED before anything is queued. */
  prepare(input: GenerateInput): ProcessedRequest {
    if (!this.accepting) throw unavailable(`model '${this.name}' is unloading`);
    return this.processor.process({ ...input, id: randomUUID(), arrivalTimeMs: Date.now() });
  }

  /** Streams a prepared request's text events; aborting `signal` (client gone) frees its blocks within a step. */
  async *generate(prepared: ProcessedRequest, signal?: AbortSignal): AsyncGenerator<GenerationEvent> {
    const { request } = prepared;
    if (signal?.aborted) throw new ConveyorError('CANCELLED', 'the request was cancelled');
    const output = new OutputProcessor(this.processor.tokenizer, request.promptTokenIds, prepared.output, request.arrivalTimeMs);
    const stream = this.engine.submit(request);
    const onAbort = (): void => this.engine.abort(request.id);
    signal?.addEventListener('abort', onAbort, { once: true });
    this.active += 1;
    this.streaming.add(request.id);
    let finished: GenerationEvent | undefined;
    let last: { update: SequenceUpdate; timeMs: number } | undefined;
    try {
      for await (const { update, timeMs } of stream) {
        last = { update, timeMs };
        const event = output.process(update, timeMs);
        if (output.stoppedByString) this.engine.abort(request.id, 'stop');
        // The engine confirmed the abort (blocks freed); the client asked for nothing, so it gets an error, not a finish.
        if (event.finishReason === 'abort' && this.serverAbort && !signal?.aborted) throw this.serverAbort;
        if (event.finishReason !== null) finished = event;
        yield event;
        if (finished) return;
      }
    } finally {
      signal?.removeEventListener('abort', onAbort);
      this.record(finished);
      if (last) {
        // A stop string or a consumer that went away ends the request before the engine says so.
        const final = { ...last.update, finishReason: finished?.finishReason ?? 'abort' };
        const summary = finishedRequest(this.name, request.arrivalTimeMs, final, last.timeMs);
        this.metrics.observeRequestFinished(summary);
        this.logFinished(request.id, summary);
      }
      this.streaming.delete(request.id);
      this.active -= 1;
      if (this.active === 0) this.idle?.();
    }
  }

  infer(_request: InferRequest): Promise<InferResponse> {
    return Promise.reject(
      new ConveyorError('UNSUPPORTED', `model '${this.name}' is decoupled: use the generate endpoints, ModelStreamInfer or the OpenAI API`),
    );
  }

  statistics() {
    return this.stats.snapshot();
  }

  failures() {
    return this.stats.failures();
  }

  /** Requests waiting for their first step (nv_inference_pending_request_count). */
  pendingRequests(): number {
    return this.engine.stats?.numWaiting ?? 0;
  }

  workersAlive(): boolean[] {
    return [this.engine.alive];
  }

  abortInFlight(reason: ConveyorError): number {
    this.serverAbort = reason;
    for (const id of this.streaming) this.engine.abort(id);
    return this.streaming.size;
  }

  async close(): Promise<void> {
    this.accepting = false;
    if (this.active > 0) await new Promise<void>((resolve) => (this.idle = resolve));
    await this.engine.close();
    this.metrics.forgetModel(this.name);
  }

  /** One log line per finished generation, with its timings and token counts. */
  private logFinished(requestId: string, r: FinishedRequest): void {
    const ms = (from: number | null, to: number | null) => (from === null || to === null ? null : Math.round((to - from) * 10) / 10);
    this.log(`generation finished (${r.reason})`, {
      requestId, model: r.model, finishReason: r.reason, promptTokens: r.promptTokens, outputTokens: r.outputTokens,
      queueMs: ms(r.arrivalMs, r.scheduledMs), ttftMs: ms(r.arrivalMs, r.firstTokenMs), e2eMs: ms(r.arrivalMs, r.finishedMs),
    });
  }

  /** Triton-style statistics for a finished generation: one inference, its queue and total time. */
  private record(event: GenerationEvent | undefined): void {
    const now = Date.now();
    if (!event || event.finishReason === 'abort') {
      this.stats.recordFailure(Math.max(0, (now - (event?.timings.arrivalMs ?? now)) * 1e6), 'CANCELED');
      return;
    }
    const { arrivalMs, scheduledMs } = event.timings;
    const queueNs = Math.max(0, ((scheduledMs ?? arrivalMs) - arrivalMs) * 1e6);
    const requestNs = Math.max(0, (now - arrivalMs) * 1e6);
    const computeNs = Math.max(0, requestNs - queueNs);
    this.stats.recordExecution(1, { computeInputNs: 0, computeInferNs: computeNs, computeOutputNs: 0 }, now);
    this.stats.recordSuccess({ requestNs, queueNs, computeInputNs: 0, computeInferNs: computeNs, computeOutputNs: 0 }, now);
  }
}
