// Where the parse worker thread starts, and the messages it speaks. The front-end kit imports
// this file only, never the worker's code, so the link is an import the layering rules see.
//
// The parse worker runs what would stall the serving thread for one large request: JSON.parse
// of a multi-megabyte body and the conversion of its JSON numbers into typed arrays. It knows no
// protocol: a job names a module of the front end that sent it (its own URL, declared beside the
// front end's decoder with `new URL(…, import.meta.url)`), and the worker calls that module's
// `parseOffThread(input)`. The module's answer comes back by structured clone, its typed arrays'
// buffers transferred, and a thrown ConveyorError comes back as the same code, message and param.

import type { ErrorCode } from '../errors.js';
import type { FaultAction } from '../threads/fault-injection.js';

export const PARSE_WORKER_ENTRY = new URL('./main.ts', import.meta.url);

export interface ParseWorkerData {
  /** Nice steps below the server's priority (the compute threads' --compute-thread-nice). */
  readonly threadNice: number;
}

export interface ParseJob {
  readonly id: number;
  /** The job module's URL (runnable in this process's layout). */
  readonly module: string;
  readonly input: unknown;
  /** TEST-ONLY (src/threads/fault-injection.ts): fail in the middle of this job, by exiting the worker or throwing. */
  readonly fault?: FaultAction;
}

/** A ConveyorError as it crosses the thread boundary; any other error crosses as INTERNAL. */
export interface WireError {
  readonly code: ErrorCode;
  readonly message: string;
  readonly param?: string;
}

export type ParseResult = { readonly id: number; readonly value: unknown } | { readonly id: number; readonly error: WireError };

/** What a job module's `parseOffThread` returns: the value, and the buffers to move rather than copy. */
export interface OffThreadAnswer<T> {
  readonly value: T;
  readonly transfer: readonly ArrayBuffer[];
}

/** The export a job module provides. */
export type ParseOffThread<I, T> = (input: I) => OffThreadAnswer<T>;
