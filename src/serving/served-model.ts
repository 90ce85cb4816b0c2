// One loaded model version as the rest of the server sees it, whatever its backend.

import type { InferRequest, InferResponse, InferStreamEvent } from '../contracts/infer.js';
import type { ModelStatistics, ModelVariant } from '../contracts/inference-service.js';
import type { ModelConfig } from '../contracts/model-config.js';
import type { FailureReason } from '../batcher/stats.js';
import type { ConveyorError } from '../errors.js';
import type { LlmMetricsObserver } from '../metrics/index.js';
import type { ResourceLimits } from '../config/limits.js';
import type { SupervisionStatus } from '../threads/worker-supervisor.js';
import type { Admission } from './admission.js';

export interface ServedModel {
  readonly name: string;
  readonly version: number;
  /** The effective config (normalized and completed from the model's metadata). */
  readonly config: ModelConfig;
  /** The precision variant it runs (servedVariant of the effective config). */
  readonly variant: ModelVariant;
  infer(request: InferRequest, signal?: AbortSignal): Promise<InferResponse>;
  /**
   * A request's responses as the model sends them, the last with `final` (a decoupled TypeScript
   * model's stream; ModelStreamInfer and BLS calls read it). Absent on backends whose decoupled
   * requests take another path (an LLM's generate).
   */
  inferStream?(request: InferRequest, signal?: AbortSignal): AsyncIterable<InferStreamEvent>;
  statistics(): ModelStatistics;
  /** Failed requests by nv_inference_request_failure reason (read by the metrics at scrape time). */
  failures?(): Readonly<Record<FailureReason, number>>;
  /** Requests queued and not yet executing (nv_inference_pending_request_count). */
  pendingRequests?(): number;
  /** One entry per worker thread (instance or engine): true while it runs. */
  workersAlive?(): readonly boolean[];
  /** Whether its workers run, restart after a crash, or crash-looped (read at every readiness check). */
  supervision?(): SupervisionStatus;
  /** Stops taking requests (UNAVAILABLE), lets queued and running ones finish, frees the instances. */
  close(): Promise<void>;
  /**
   * Ends every generation still running with `reason` (the shutdown's exit timeout): each stream
   * gets it as its final error and the engine frees its blocks. Returns how many were running.
   * Backends whose requests cannot be interrupted (a running ONNX batch) leave this out.
   */
  abortInFlight?(reason: ConveyorError): number;
  /** True when its answers go through the server's response cache (src/serving/cached-model.ts): Triton exports its nv_cache_*_per_model series then. */
  readonly responseCacheEnabled?: boolean;
}

export interface BackendLoadRequest {
  readonly name: string;
  readonly version: number;
  /** The model directory (config.pbtxt, labels) and the version directory inside it. */
  readonly modelDir: string;
  readonly versionDir: string;
  readonly config: ModelConfig;
  /** Structured fields go into the JSON log line (request timings, token counts). */
  readonly log: (line: string, fields?: Record<string, unknown>) => void;
  /** Where an LLM backend reports engine steps and finished requests; absent in tests that need none. */
  readonly llmMetrics?: LlmMetricsObserver;
  /** The server's prompt and request-time limits and its compute threads' priority (defaults when absent). */
  readonly limits?: Pick<ResourceLimits, 'maxPromptChars' | 'maxRequestSecs' | 'computeThreadNice' | 'undeliveredOutputTimeoutSecs' | 'structuredOutputsCompileTimeoutSecs'>;
  /** The server's load shedding, shared by every model and version (an LLM's generations enter it); a fresh unbounded one when absent. */
  readonly admission?: Admission;
  /** The server's HTTP host and port as configured (port 0: picked at listen); absent in tests that need none. */
  readonly servingAddress?: { readonly host: string; readonly port: number };
  /** The other models of the repository, for backends that call them (ensemble steps, a TypeScript model's BLS calls); absent in tests that need none. */
  readonly models?: ModelRouting;
}

/** Routing to the repository's loaded models, as a client request is routed (the same READY rules and errors). */
export interface ModelRouting {
  /** The version a call goes to: the given one if READY, else the highest READY one. */
  resolve(name: string, version?: string): ServedModel;
  /**
   * Loads `name` unless it is loaded already, after any load or unload of it under way (an
   * ensemble's composing models load with it, in every control mode); rejects as a load does.
   */
  ensureLoaded(name: string): Promise<void>;
  /** The config `name` is loaded with, else the one its config.pbtxt holds (read before loading it). */
  configOf(name: string): Promise<ModelConfig>;
}

/** Loads one version for one backend ("onnxruntime", "llm", "typescript"). */
export type BackendLoader = (request: BackendLoadRequest) => Promise<ServedModel>;

/** What a config.pbtxt's `hf_model` parameter asks of the resolver: the variant and attention backend its parameters name. */
export interface HubModelWants {
  readonly precision?: string;
  readonly attentionBackend?: string;
}

/** A Hub model resolved to a directory the llm backend serves, and where it came from. */
export interface ResolvedHubModel {
  readonly dir: string;
  readonly repo: string;
  readonly revision: string;
  readonly commit: string;
  /** The variant chosen (the config's precision, or the first the export has). */
  readonly precision: string;
}

/**
 * `hf_model` (ORG/NAME[@REVISION]) → its directory, fetched into the Hugging Face cache and
 * converted as needed. Given by the CLI (src/hub and the converter); rejects with a message
 * naming the repository and what to do.
 */
export type HubModelResolver = (spec: string, wants: HubModelWants, log: (line: string) => void) => Promise<ResolvedHubModel>;
