// The "llm" backend: a Hugging Face ONNX decoder directory served by one engine worker
// (continuous batching over a paged KV cache). Text lives here, on the main thread: the input
// processor validates and tokenizes before anything is scheduled, the output processor turns
// step updates into text events.

import { randomUUID } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { setMaxListeners } from 'node:events';
import type { InferRequest, InferResponse, InferStreamEvent } from '../contracts/infer.js';
import type { RunnerKind } from '../contracts/engine-messages.js';
import type { ModelConfig } from '../contracts/model-config.js';
import { intraOpSpinningOf } from './ort-threading.js';
import { kvCacheBytesOf, kvCacheDtypeOf, kvEventsOf, llmModelFile, parameter, positiveInt, reasoningParserOf, schedulingPolicy, speculativeConfigOf, toolCallParserOf } from './llm-parameters.js';
import type { ModelVariant } from '../contracts/inference-service.js';
import { ModelStatsRecorder } from '../batcher/stats.js';
import { EngineClient } from '../engine-client/engine-client.js';
import { InputProcessor, type ProcessInput } from '../engine-client/input-processor.js';
import { MODEL_FILE_NAMES } from '../tokenizer/model-files.js';
import { confinedPath, existingConfinedFile, redactPaths } from '../repository/confine.js';
import { servedVariant } from '../repository/variants.js';
import { completeLlmTensors } from '../repository/config/index.js';
import { OutputProcessor } from '../engine-client/output-processor.js';
import { ConveyorError, invalidArg, unavailable } from '../errors.js';
import { faultInjectionOf } from '../threads/fault-injection.js';
import { finishedRequest, NO_LLM_METRICS, type FinishedRequest, type LlmEngineMetrics, type LlmMetricsObserver } from '../metrics/index.js';
import type { SequenceUpdate } from '../contracts/generate.js';
import type { GenerationEvent, ProcessedRequest } from '../contracts/text-generation.js';
import type { BackendLoadRequest, ServedModel } from './served-model.js';
import { Admission, type AdmissionSeat } from './admission.js';
import { DEFAULT_LIMITS } from '../config/limits.js';
import type { ToolCallParserName } from '../tool-calls/index.js';
import { buildTritonLlmRequest, tritonInputsFromTensors, type TritonLlmRequest } from '../triton-llm/request.js';
import { tritonLlmInferResponse, tritonLlmResponses, type TritonLlmResponse } from '../triton-llm/responses.js';
import { REASONING_FORMATS, type ReasoningParserName, type ReasoningPlan } from '../reasoning/index.js';

/** How the load log names the runner an engine opened (a paged model falls back to the paged graph where the native kernel cannot load). */
const RUNNER_BACKEND_NAMES: Readonly<Record<RunnerKind, string>> = {
  'paged-native': 'paged (native kernel)',
  paged: 'paged (ONNX graph attention)',
  'past-key-values': 'past_key_values',
};

/** A generation request before tokenization: the prompt and the unchecked generation parameters of any front end. */
export type GenerateInput = Omit<ProcessInput, 'id'>;

export async function loadLlmModel(request: BackendLoadRequest): Promise<LlmModel> {
  const { config, versionDir } = request;
  const precision = parameter(config, 'precision') ?? 'fp32';
  const versionRoot = { dir: versionDir, display: `${request.name}/${request.version}` };
  const { file, backend: attentionBackend, chosenBy } = await llmModelFile(config, versionRoot);
  const model = await existingConfinedFile(versionRoot, file, 'model file');
  // The tokenizer and config files have fixed names; a link among them must not lead out either.
  for (const name of MODEL_FILE_NAMES) await confinedPath(versionRoot, name, 'model file');
  // The engine reads the vocabulary from it when a grammar-constrained request first arrives.
  const tokenizerFile = await confinedPath(versionRoot, 'tokenizer.json', 'model file');
  const maxModelLen = parameter(config, 'max_model_len');
  const log = (line: string): void => request.log(`${request.name}:${request.version}: ${line}`);
  log(
    `precision ${precision}: loading ${file}${attentionBackend === 'past_key_values' && chosenBy === 'parameter' ? '' : ` (attention_backend ${attentionBackend}${chosenBy === 'default' ? ', default' : ''})`}`,
  );
  const faultInjection = faultInjectionOf(config, ['step', 'draft_pass'], log);
  const kvEvents = kvEventsOf(config, request);
  const speculative = await speculativeConfigOf(config, versionDir, tokenizerFile);
  // A count that could never be reached would make a supervision test wait forever instead of fail.
  if (faultInjection?.at === 'draft_pass' && speculative?.method !== 'draft_model')
    throw invalidArg('parameter fault_injection: draft_pass counts the passes of a draft model; this model has no speculative_config method draft_model');
  const chatSpecialTokens = parameter(config, 'chat_special_tokens') ?? 'text';
  if (chatSpecialTokens !== 'text' && chatSpecialTokens !== 'special') throw invalidArg(`parameter chat_special_tokens must be text or special, got '${chatSpecialTokens}'`);
  const limits = request.limits ?? DEFAULT_LIMITS;
  const policy = schedulingPolicy(config);
  toolCallParserOf(config);
  const reasoningParser = reasoningParserOf(config);
  const processor = await InputProcessor.load(versionDir, {
    ...(maxModelLen ? { maxModelLen: positiveInt(config, 'max_model_len', 1) } : {}),
    maxPromptChars: limits.maxPromptChars,
    chatSpecialTokens,
    ...(reasoningParser ? { reasoningFormat: REASONING_FORMATS[reasoningParser] } : {}),
  }).catch((error: unknown) => {
    throw new ConveyorError('INVALID_ARG', redactPaths((error as Error).message, [[versionDir, versionRoot.display]]));
  });
  if (parameter(config, 'tool_call_parser') === 'auto') {
    const chosen = toolCallParserOf(config, processor.chatTemplateSource());
    log(`tool_call_parser auto: ${chosen ?? 'none (the chat template shows no tool-call format; tool_choice auto is refused)'}`);
  }
  const engine = await EngineClient.start(
    {
      modelPath: model.path,
      device: config.instance_group.some((g) => g.kind === 'KIND_GPU') || parameter(config, 'device') === 'cuda' ? 'cuda' : 'cpu',
      intraOpNumThreads: positiveInt(config, 'intra_op_thread_count', availableParallelism()),
      intraOpSpinning: intraOpSpinningOf(config),
      maxNumSeqs: positiveInt(config, 'max_num_seqs', 32),
      maxNumBatchedTokens: positiveInt(config, 'max_num_batched_tokens', 512),
      maxModelLen: processor.info.contextLength,
      blockSize: positiveInt(config, 'block_size', 16),
      kvCacheBytes: kvCacheBytesOf(config),
      kvCacheDtype: kvCacheDtypeOf(config),
      enablePrefixCaching: parameter(config, 'enable_prefix_caching') !== 'false',
      schedulingPolicy: policy,
      sampleableVocabSize: processor.info.vocabSize,
      ...(tokenizerFile.exists ? { tokenizerPath: tokenizerFile.path } : {}),
      ...(faultInjection ? { faultInjection } : {}),
      ...(kvEvents ? { kvEvents } : {}),
      ...(speculative ? { speculative } : {}),
      threadNice: limits.computeThreadNice,
      grammarCompileTimeoutSecs: limits.structuredOutputsCompileTimeoutSecs,
    },
    log,
    { label: `'${request.name}' version ${request.version}` },
  );
  log(`attention backend: ${RUNNER_BACKEND_NAMES[engine.info.runnerKind]} — ${chosenBy === 'default' ? 'default' : 'attention_backend parameter'}`);
  const metrics = request.llmMetrics ?? NO_LLM_METRICS;
  const engineMetrics = metrics.attach(request.name, { blockSize: engine.info.blockSize, numBlocks: engine.info.numBlocks });
  engine.onStep((output) => engineMetrics.observeStep(output));
  // The effective config names the file this version runs (Triton's field for it), so
  // GET /v2/models/{m}/config shows which precision variant was loaded,
  // and lists every input and output the server handles, as the vLLM backend's auto-complete does.
  const effective: ModelConfig = { ...completeLlmTensors(config), default_model_filename: file };
  return new LlmModel(request.name, request.version, effective, processor, engine, { observer: metrics, engine: engineMetrics }, request.log, {
    maxRequestSecs: limits.maxRequestSecs,
    admission: request.admission ?? new Admission(),
    undeliveredOutputTimeoutMs: limits.undeliveredOutputTimeoutSecs * 1000,
  });
}

/**
 * The engine refuses a grammar it cannot compile as INVALID_ARG without a field (it never saw the
 * wire); the caller's error names the field that gave the grammar.
 */
function namingGrammarField(error: unknown, prepared: ProcessedRequest): unknown {
  if (!(error instanceof ConveyorError) || error.code !== 'INVALID_ARG' || error.param !== undefined || prepared.grammarParam === undefined) return error;
  return new ConveyorError('INVALID_ARG', `${prepared.grammarParam}: ${error.message}`, prepared.grammarParam);
}

export class LlmModel implements ServedModel {
  private readonly stats: ModelStatsRecorder;
  private accepting = true;
  private idle?: () => void;
  /** Engine request ids of the generations now streaming: the ones abortInFlight ends and close waits for. */
  private readonly streaming = new Set<string>();
  /** Set once the server ends the generations still running; they then fail with it. */
  private serverAbort?: ConveyorError;
  /**
   * Generations whose consumer has not taken their latest event yet (a front end waiting for a
   * client that does not read), with the timer that abandons them once close() has begun.
   */
  private readonly undelivered = new Map<string, NodeJS.Timeout | undefined>();
  /** Generations close() stopped waiting for; resumed, they fail with undeliveredError(). */
  private readonly abandoned = new Set<string>();
  private readonly closingController = new AbortController();
  /** How this model writes tool calls (the tool_call_parser parameter), or null. */
  readonly toolCallParser: ToolCallParserName | null;
  /** How this model marks its thinking block (the reasoning_parser parameter), or null. */
  readonly reasoningParser: ReasoningParserName | null;
  readonly variant: ModelVariant;

  /**
   * Aborted when close() begins (unload, sleep, a precision swap, the drain). A front end waiting
   * for a client that does not read gives up `undeliveredOutputTimeoutMs` after it (or after it
   * began waiting, if later) and disconnects the client: src/server/kit/stalled-writes.ts.
   */
  get closing(): AbortSignal {
    return this.closingController.signal;
  }

  /** --undelivered-output-timeout-secs, in ms. */
  get undeliveredOutputTimeoutMs(): number {
    return this.limits.undeliveredOutputTimeoutMs ?? DEFAULT_LIMITS.undeliveredOutputTimeoutSecs * 1000;
  }

  constructor(
    readonly name: string,
    readonly version: number,
    readonly config: ModelConfig,
    readonly processor: InputProcessor,
    readonly engine: EngineClient,
    private readonly metrics: { readonly observer: LlmMetricsObserver; readonly engine: LlmEngineMetrics } = { observer: NO_LLM_METRICS, engine: NO_LLM_METRICS.attach('') },
    private readonly log: (line: string, fields?: Record<string, unknown>) => void = () => {},
    /**
     * maxRequestSecs: a generation still running this long after it started is aborted; 0 = no limit.
     * admission: the server's load shedding, which every generation of this model enters (one bound per model name).
     */
    private readonly limits: { readonly maxRequestSecs: number; readonly admission: Admission; readonly undeliveredOutputTimeoutMs?: number } = {
      maxRequestSecs: 0,
      admission: new Admission(),
    },
  ) {
    this.stats = new ModelStatsRecorder(name, String(version));
    // Every write waiting for a slow client listens to it (stalled-writes.ts): as many as generations.
    setMaxListeners(0, this.closingController.signal);
    this.toolCallParser = toolCallParserOf(config, processor.chatTemplateSource());
    this.reasoningParser = reasoningParserOf(config);
    this.variant = servedVariant(config, 'onnx/model.onnx');
  }

  /** How a prepared request's output splits into reasoning and answer; null for a model without a reasoning_parser. */
  reasoningOf(prepared: ProcessedRequest): ReasoningPlan | null {
    if (this.reasoningParser === null) return null;
    const format = REASONING_FORMATS[this.reasoningParser];
    return { format, startsInside: prepared.request.thinking?.startsInside ?? format.alwaysInside };
  }

  /** Validates and tokenizes (long prompts off the main thread); rejects with INVALID_ARG / CONTEXT_LENGTH_EXCEEDED before anything is queued. */
  async prepare(input: GenerateInput): Promise<ProcessedRequest> {
    if (!this.accepting) throw unavailable(`model '${this.name}' is unloading`);
    // No arrival time here: the engine stamps it on its own clock when the request reaches it.
    return this.processor.processAsync({ ...input, id: randomUUID() });
  }

  /**
   * Admits generations that start together (a request's n choices) or throws Overloaded (the
   * neutral "retry after", src/serving/admission.ts); pass each its seat to `generate`.
   */
  admit(prepared: readonly ProcessedRequest[]): AdmissionSeat[] {
    return this.limits.admission.admit(
      this.name,
      prepared.map((p) => p.request.promptTokenIds.length),
    );
  }

  /**
   * Streams a prepared request's text events; aborting `signal` (client gone) frees its blocks
   * within a step. Every generation passes admission here, on the first pull: with the `seat`
   * `admit` gave it, or else on its own (Overloaded when the model's queue is full). The seat is
   * given back with the first event, or when the generation ends before one.
   */
  async *generate(prepared: ProcessedRequest, signal?: AbortSignal, seat?: AdmissionSeat): AsyncGenerator<GenerationEvent> {
    const { request } = prepared;
    if (signal?.aborted) {
      seat?.leave();
      throw new ConveyorError('CANCELLED', 'the request was cancelled');
    }
    const admitted = seat ?? this.admit([prepared])[0]!;
    const output = new OutputProcessor(this.processor.tokenizer, request.promptTokenIds, prepared.output, request.thinking ?? null);
    const stream = this.submit(request, admitted);
    const onAbort = (): void => this.engine.abort(request.id);
    signal?.addEventListener('abort', onAbort, { once: true });
    // The limit aborts in the engine even while the consumer is not pulling (a paused client).
    const deadline = this.startDeadline(request.id);
    this.streaming.add(request.id);
    let finished: GenerationEvent | undefined;
    let last: { update: SequenceUpdate; timeMs: number } | undefined;
    try {
      for await (const { update, timeMs } of stream) {
        admitted.leave();
        last = { update, timeMs };
        if (deadline.expired) throw deadline.error();
        const event = output.process(update, timeMs);
        if (output.stoppedByString) this.engine.abort(request.id, 'stop');
        // The engine confirmed the abort (blocks freed); the client asked for nothing, so it gets an error, not a finish.
        if (event.finishReason === 'abort' && this.serverAbort && !signal?.aborted) throw this.serverAbort;
        if (event.finishReason !== null) finished = event;
        this.awaitConsumer(request.id);
        yield event;
        this.consumerTook(request.id);
        if (this.abandoned.has(request.id)) throw this.undeliveredError();
        if (finished) return;
      }
      if (deadline.expired) throw deadline.error();
    } catch (error) {
      throw namingGrammarField(error, prepared);
    } finally {
      admitted.leave();
      deadline.clear();
      signal?.removeEventListener('abort', onAbort);
      this.record(finished);
      if (last) {
        // A stop string or a consumer that went away ends the request before the engine says so.
        const final = { ...last.update, finishReason: finished?.finishReason ?? 'abort' };
        const summary = finishedRequest(this.name, final, last.timeMs);
        this.metrics.observer.observeRequestFinished(summary);
        this.logFinished(request.id, summary);
      }
      this.consumerTook(request.id);
      this.abandoned.delete(request.id);
      this.streaming.delete(request.id);
      if (this.streaming.size === 0) this.idle?.();
    }
  }

  /** The generation's event waits for its consumer; once close() has begun, only so long. */
  private awaitConsumer(requestId: string): void {
    this.undelivered.set(requestId, this.closing.aborted ? this.abandonTimer(requestId) : undefined);
  }

  private consumerTook(requestId: string): void {
    clearTimeout(this.undelivered.get(requestId));
    this.undelivered.delete(requestId);
  }

  private abandonTimer(requestId: string): NodeJS.Timeout {
    return setTimeout(() => this.abandon(requestId), this.undeliveredOutputTimeoutMs);
  }

  /**
   * close() stops waiting for a generation whose client read nothing for the bound: the engine
   * ends it if it still runs (its blocks are freed at the next step; a finished one's already
   * were), and its front end, which gave up on the client at the same bound, disconnects it.
   */
  private abandon(requestId: string): void {
    this.undelivered.delete(requestId);
    if (!this.streaming.has(requestId)) return;
    this.abandoned.add(requestId);
    this.engine.abort(requestId);
    this.streaming.delete(requestId);
    this.log(`${this.name}: generation ${requestId} abandoned: its client read nothing for ${this.undeliveredOutputTimeoutMs / 1000} s while the model was going`, { requestId, model: this.name });
    if (this.streaming.size === 0) this.idle?.();
  }

  private undeliveredError(): ConveyorError {
    return unavailable(`model '${this.name}' was unloaded while this client read nothing for ${this.undeliveredOutputTimeoutMs / 1000} s (--undelivered-output-timeout-secs); retry the request`);
  }

  /** Hands the request to the engine; one it refuses (engine not running) gives its seat back. */
  private submit(request: ProcessedRequest['request'], seat: AdmissionSeat): ReturnType<EngineClient['submit']> {
    try {
      return this.engine.submit(request);
    } catch (error) {
      seat.leave();
      throw error;
    }
  }

  /** The server's time limit, a main-thread timer from submission (it reads no timestamps, so no clock is mixed). */
  private startDeadline(requestId: string): { readonly expired: boolean; error(): ConveyorError; clear(): void } {
    const limitSecs = this.limits.maxRequestSecs;
    const state = { expired: false };
    const timer =
      limitSecs > 0
        ? setTimeout(() => {
            state.expired = true;
            this.engine.abort(requestId);
          }, limitSecs * 1000)
        : undefined;
    return {
      get expired() {
        return state.expired;
      },
      error: () => new ConveyorError('DEADLINE_EXCEEDED', `the generation ran past the server's ${limitSecs}-second limit (--max-request-secs) and was stopped`),
      clear: () => clearTimeout(timer),
    };
  }

  /**
   * Triton's LLM request (the vLLM backend's inputs, src/triton-llm) run here, answered as the
   * vLLM backend answers. Validation and tokenization run on the first next(), so a refused
   * request throws before any response exists; aborting `signal` ends the generation within an
   * engine step, its last response then reporting finish_reason "abort".
   */
  async *tritonGenerate(request: TritonLlmRequest, signal?: AbortSignal): AsyncGenerator<TritonLlmResponse> {
    const prepared = await this.prepare({ prompt: { kind: 'text', text: request.prompt }, sampling: request.sampling });
    yield* tritonLlmResponses(request, { model: this.name, version: String(this.version) }, this.generate(prepared, signal));
  }

  /**
   * A KServe request in the vLLM backend's tensors (text_input, stream, max_tokens, …; sampling in
   * the parameters), its responses as tensors: what ModelStreamInfer, a TypeScript model's BLS
   * inferStream and an ensemble's LLM step read. Leaving the loop early aborts the generation.
   */
  async *inferStream(request: InferRequest, signal?: AbortSignal): AsyncGenerator<InferStreamEvent> {
    const ref = { model: request.model, ...(request.version ? { version: request.version } : {}), ...(request.id ? { id: request.id } : {}) };
    const llm = buildTritonLlmRequest(ref, tritonInputsFromTensors(request.inputs), request.parameters);
    const wanted = request.outputs ? new Set(request.outputs.map((o) => o.name)) : undefined;
    for await (const response of this.tritonGenerate(llm, signal)) yield { response: tritonLlmInferResponse(response, wanted), final: response.final };
  }

  /** Decoupled, as Triton's LLM backends are: one-response protocols (HTTP infer, gRPC ModelInfer, BLS infer) are refused. */
  infer(_request: InferRequest): Promise<InferResponse> {
    return Promise.reject(new ConveyorError('UNSUPPORTED', `model '${this.name}' is decoupled: use the generate endpoints, ModelStreamInfer, a BLS inferStream or the OpenAI API`));
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

  supervision() {
    return this.engine.supervision;
  }

  abortInFlight(reason: ConveyorError): number {
    this.serverAbort = reason;
    for (const id of this.streaming) this.engine.abort(id);
    return this.streaming.size;
  }

  async close(): Promise<void> {
    this.accepting = false;
    this.closingController.abort(unavailable(`model '${this.name}' is unloading`));
    // Generations whose client is not reading get the bound from now, not forever.
    for (const [requestId, timer] of this.undelivered) if (timer === undefined) this.undelivered.set(requestId, this.abandonTimer(requestId));
    if (this.streaming.size > 0) await new Promise<void>((resolve) => (this.idle = resolve));
    await this.engine.close();
    await this.processor.close();
    this.metrics.engine.detach();
  }

  /** One log line per finished generation, with its timings and token counts. */
  private logFinished(requestId: string, r: FinishedRequest): void {
    const ms = (from: number | null, to: number | null) => (from === null || to === null ? null : Math.round((to - from) * 10) / 10);
    this.log(`generation finished (${r.reason})`, {
      requestId,
      model: r.model,
      finishReason: r.reason,
      promptTokens: r.promptTokens,
      outputTokens: r.outputTokens,
      queueMs: ms(r.arrivalMs, r.scheduledMs),
      ttftMs: ms(r.arrivalMs, r.firstTokenMs),
      e2eMs: ms(r.arrivalMs, r.finishedMs),
      // Speculative decoding: proposals checked, tokens proposed and accepted, and the mean accepted per check.
      ...(r.specDecode
        ? {
            specDrafts: r.specDecode.numDrafts,
            specDraftTokens: r.specDecode.numDraftTokens,
            specAcceptedTokens: r.specDecode.numAcceptedTokens,
            specMeanAccepted: Math.round((r.specDecode.numAcceptedTokens / r.specDecode.numDrafts) * 100) / 100,
          }
        : {}),
    });
  }

  /**
   * Triton-style statistics for a finished generation: one inference, its queue and total time,
   * all differences of engine-clock times (arrival to the step of its last event).
   */
  private record(event: GenerationEvent | undefined): void {
    const now = Date.now();
    if (!event || event.finishReason === 'abort') {
      this.stats.recordFailure(event ? Math.max(0, (event.timings.tokenMs - event.timings.arrivalMs) * 1e6) : 0, 'CANCELED');
      return;
    }
    const { arrivalMs, scheduledMs, tokenMs } = event.timings;
    const queueNs = Math.max(0, ((scheduledMs ?? arrivalMs) - arrivalMs) * 1e6);
    const requestNs = Math.max(0, (tokenMs - arrivalMs) * 1e6);
    const computeNs = Math.max(0, requestNs - queueNs);
    this.stats.recordExecution(1, { computeInputNs: 0, computeInferNs: computeNs, computeOutputNs: 0 }, now);
    this.stats.recordSuccess({ requestNs, queueNs, computeInputNs: 0, computeInferNs: computeNs, computeOutputNs: 0 }, now);
  }
}
