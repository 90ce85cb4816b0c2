// What a TypeScript model (backend "typescript") is and what it is given: the class a model.ts /
// model.js exports, the requests its execute() gets, the responses it returns or sends, and the
// model-to-model calls (BLS) it can make. See docs/typescript-backend.md.

import type { Parameters, RequestedOutput } from '../contracts/infer.js';
import type { InitializeArgs, WireError } from '../contracts/typescript-model.js';
import type { Tensor } from '../contracts/tensors.js';

export type { InitializeArgs, Parameters };

/** Error codes a model may give a failure (the server's catalog; INTERNAL when none is given). */
export type InferenceErrorCode = WireError['code'];

const BRAND = Symbol.for('conveyor.InferenceError');

/**
 * A failure the model reports (Triton's TritonError): as a response's `error` it fails that
 * request alone; thrown from execute() it fails the batch. The code picks the status clients
 * see (INVALID_ARG: 400, INTERNAL: 500, ...).
 */
export class InferenceError extends Error {
  readonly [BRAND] = true;
  constructor(
    message: string,
    readonly code: InferenceErrorCode = 'INTERNAL',
  ) {
    super(message);
    this.name = 'InferenceError';
  }

  /** True for an InferenceError, even one from another copy of this module. */
  static is(value: unknown): value is InferenceError {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
  }
}

/** One request's answer: its output tensors, or its own error. */
export type ModelResponse = { readonly outputs: readonly Tensor[] } | { readonly error: InferenceError | Error | string };

/** What a model-to-model call returns. */
export interface InferResult {
  readonly model: string;
  readonly version: string;
  readonly outputs: readonly Tensor[];
  /** The output named `name`; throws if the response has none. */
  output(name: string): Tensor;
}

export interface InferOptions {
  /** A version number; absent: the highest READY version. */
  readonly version?: string | number;
  /** Output names to return (absent: all the model's outputs), or requested outputs with parameters. */
  readonly outputs?: readonly (string | RequestedOutput)[];
  readonly parameters?: Parameters;
}

/** A decoupled model's per-request sender (Triton's response sender). */
export interface ResponseSender {
  /** Sends one response; `final: true` completes the request (triton_final_response). */
  send(response: ModelResponse, options?: { readonly final?: boolean }): void;
  /** Completes the request without a response (a flags-only final). */
  close(): void;
  /** True once the final response was sent. */
  readonly closed: boolean;
}

export interface ModelRequest {
  /** The client's request id ('' when it gave none). */
  readonly id: string;
  readonly inputs: readonly Tensor[];
  /** The input named `name`; throws an INVALID_ARG InferenceError if the request has none (an optional input). */
  input(name: string): Tensor;
  /** The outputs the client asked for (all the model's outputs when it named none). */
  readonly requestedOutputs: readonly string[];
  readonly parameters: Parameters;
  /** Aborts when the client goes away; its BLS calls still in flight then end CANCELLED. */
  readonly signal: AbortSignal;
  isCancelled(): boolean;
  /** Calls another loaded model through the server's serving path (its batcher and instances): BLS. */
  infer(model: string, inputs: readonly Tensor[], options?: InferOptions): Promise<InferResult>;
  /** Calls a decoupled model and yields each of its responses as it arrives. */
  inferStream(model: string, inputs: readonly Tensor[], options?: InferOptions): AsyncIterable<InferResult>;
  /** Present on a decoupled model's requests. */
  readonly sender?: ResponseSender;
}

/**
 * The class a model file exports (as its default export, or named `TritonPythonModel`), made
 * once per instance with `new`. execute() returns one response per request, in order; a
 * decoupled model sends through `request.sender` instead and returns nothing.
 */
export interface TypeScriptModel {
  initialize?(args: InitializeArgs): void | Promise<void>;
  execute(requests: readonly ModelRequest[]): readonly ModelResponse[] | undefined | Promise<readonly ModelResponse[] | undefined>;
  finalize?(): void | Promise<void>;
}
