// The one internal request/response pair every classic-model front end (KServe HTTP, KServe
// gRPC, OpenAI embeddings) translates to and from.

import type { Tensor } from './tensors.js';

export type ParameterValue = string | number | boolean | bigint;
export type Parameters = Readonly<Record<string, ParameterValue>>;

export interface RequestedOutput {
  readonly name: string;
  /** e.g. binary_data (HTTP only), classification (top-K). */
  readonly parameters: Parameters;
}

export interface InferRequest {
  readonly model: string;
  /** Empty or undefined: the highest ready version. */
  readonly version?: string;
  readonly id?: string;
  /** Request parameters: priority, timeout (µs), binary_data_output, … */
  readonly parameters: Parameters;
  readonly inputs: readonly Tensor[];
  /** Undefined: every output of the model. */
  readonly outputs?: readonly RequestedOutput[];
}

export interface InferResponse {
  readonly model: string;
  readonly version: string;
  readonly id?: string;
  readonly parameters?: Parameters;
  readonly outputs: readonly Tensor[];
}

/** One response of a decoupled model's request; `response` is absent on a flags-only final. */
export interface InferStreamEvent {
  readonly response?: InferResponse;
  /** True on the request's last event (triton_final_response). */
  readonly final: boolean;
}
