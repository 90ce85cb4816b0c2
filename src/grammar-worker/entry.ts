// Where the grammar worker thread starts, and the messages it speaks. The engine worker imports
// this file only, never the worker's code, so the link is an import the layering rules see.
//
// The grammar worker owns every piece of xgrammar state of one engine: the tokenizer info, the
// compiled-grammar cache and one matcher per constrained request. Keeping it off the engine
// thread is what lets a step's masks be computed while ORT runs that step's forward pass (ORT
// blocks the engine thread for the whole pass), and keeps slow compiles from stalling steps.

import type { GrammarSpec } from '../contracts/generate.js';
import type { ErrorCode } from '../errors.js';

export const GRAMMAR_WORKER_ENTRY = new URL('./main.ts', import.meta.url);
/** The compile probe thread the grammar worker starts (compile-probe.ts). */
export const COMPILE_PROBE_ENTRY = new URL('./probe-main.ts', import.meta.url);

export interface CompileProbeData {
  /** The model's tokenizer.json. */
  readonly tokenizerPath: string;
  /** Logits row length the masks cover. */
  readonly vocabSize: number;
}

export interface GrammarWorkerData extends CompileProbeData {
  /** The longest a new grammar may take to compile, seconds (--structured-outputs-compile-timeout-secs); absent or 0: unbounded. */
  readonly compileTimeoutSecs?: number;
}

export type ToCompileProbe = { readonly type: 'compile'; readonly id: number; readonly text: string };
export type FromCompileProbe =
  | { readonly type: 'ready' }
  | { readonly type: 'compiled'; readonly id: number; readonly ms: number }
  /** xgrammar refused the text (the grammar worker's own check normally refuses it first). */
  | { readonly type: 'refused'; readonly id: number; readonly message: string };

/**
 * One constrained row's catch-up before its mask: undo the last `rollBack` tokens the matcher
 * accepted, then accept `accept` (the engine keeps a mirror of what the matcher holds, so this is
 * the difference between that and the row's answer tokens — usually one new token).
 */
export interface MaskJob {
  readonly requestId: string;
  readonly rollBack: number;
  readonly accept: readonly number[];
  /**
   * Speculative decoding's proposals for the row's next tokens: after the mask, each is accepted
   * in turn and the mask after it computed, up to one the grammar refuses or a stop token that
   * ends it; then they are rolled back, so the matcher holds the catch-up only (the engine
   * catches it up over the proposals the check kept, next step).
   */
  readonly drafts?: readonly number[];
}

export interface MaskResult {
  readonly requestId: string;
  /** The next-token bitmask (bit id & 31 of word id >> 5); null when the worker has no matcher for the request. */
  readonly mask: Int32Array | null;
  /** Tokens the matcher holds after the catch-up. */
  readonly accepted: number;
  /** True when the grammar refused a token of `accept` (the matcher stopped before it). */
  readonly refused: boolean;
  /**
   * With `drafts`: the mask after each proposal the grammar took (draftMasks[i] follows drafts[0..i]),
   * ending at the first it refused or after one that ended the grammar.
   */
  readonly draftMasks?: readonly Int32Array[];
}

/**
 * A greedy row sampled without a mask: catch up as a MaskJob does, then try its best tokens in
 * order. Greedy's choice under a mask is the first allowed token in the order (logit descending,
 * id ascending) that argmax breaks ties by, so when one of the row's top candidates is allowed it
 * is exactly the masked choice, and the mask is computed only when none is (worth it: the costly
 * masks are those where nearly every token is allowed — inside strings — and there one of a few
 * top candidates almost always is).
 */
export interface TryJob extends MaskJob {
  /** The row's best tokens by processed logit, best first (ties by ascending id). */
  readonly candidates: readonly number[];
}

export interface TryResult {
  readonly requestId: string;
  /** The first candidate the matcher took (it now holds it); null when it took none. */
  readonly token: number | null;
  /** When no candidate was taken: the mask at the state before them, to choose under. */
  readonly mask: Int32Array | null;
  /** Tokens the matcher holds after the job. */
  readonly accepted: number;
  /** True when the grammar refused a token of the catch-up (`accept`). */
  readonly refused: boolean;
  /** False when the worker has no matcher for the request. */
  readonly known: boolean;
  /** The worker's time on this row (catch-up, candidates, mask), ms. */
  readonly ms: number;
}

export type ToGrammarWorker =
  /** Compile (or find cached) the spec and make the request's matcher. */
  | { readonly type: 'open'; readonly id: number; readonly requestId: string; readonly spec: GrammarSpec; readonly stopTokenIds: readonly number[] }
  | { readonly type: 'masks'; readonly id: number; readonly rows: readonly MaskJob[] }
  | { readonly type: 'try'; readonly id: number; readonly rows: readonly TryJob[] }
  | { readonly type: 'release'; readonly requestId: string };

export type FromGrammarWorker =
  | { readonly type: 'opened'; readonly id: number }
  | { readonly type: 'masks'; readonly id: number; readonly masks: readonly MaskResult[]; readonly ms: number }
  | { readonly type: 'tried'; readonly id: number; readonly results: readonly TryResult[]; readonly ms: number }
  /** A job failed: a spec xgrammar refuses (INVALID_ARG) or a fault (INTERNAL, after which the worker exits). */
  | { readonly type: 'failed'; readonly id: number; readonly code: ErrorCode; readonly message: string };
