// The grammar side of the engine: which requests are constrained, and their masks. The matchers
// themselves live on the grammar worker (grammar-client.ts); this keeps, per request, a mirror
// of the tokens its matcher holds, so each step sends only the difference between that and the
// row's answer tokens (one token in the normal step, a rollback after anything that changed the
// output behind the matcher's back: preemption keeps the output, a dropped step does not).
//
// startMasks() posts a step's jobs and returns at once, so the worker computes them while the
// engine thread is blocked in the forward pass; the engine awaits the promise after it.

import type { GenerateRequest } from '../contracts/generate.js';
import { invalidArg } from '../errors.js';
import { maskAllows } from '../contracts/token-mask.js';
import type { MaskJob } from '../grammar-worker/entry.js';
import { GrammarWorkerClient } from './grammar-client.js';
import { afterTry, FRESH_SPECULATION, type SpeculationState, shouldTry } from './speculation.js';

export interface ConstrainedRowsOptions {
  /** The model's tokenizer.json; absent, a constrained request is refused. */
  readonly tokenizerPath: string | undefined;
  /** Logits row length. */
  readonly vocabSize: number;
  /** The compile bound, seconds (0: unbounded). */
  readonly compileTimeoutSecs?: number;
}

/**
 * A row's mask — and with proposals, the mask after each its grammar took (MaskResult.draftMasks) —
 * or why it has none (the request must then end: it cannot go on under its grammar).
 */
export type RowMask = { readonly mask: Int32Array; readonly draftMasks?: readonly Int32Array[] } | { readonly failed: string };

interface Row {
  /** Ids that may end the grammar: the request's EOS and stop tokens. */
  readonly stopIds: ReadonlySet<number>;
  /** The tokens the worker's matcher holds, as far as the engine knows. */
  mirror: readonly number[];
  /** Set once the row cannot be masked any more (its grammar refused a token, or the worker died). */
  failed: string | null;
  /** Whether its greedy candidates are tried before a mask (speculation.ts). */
  speculation: SpeculationState;
}

export interface MaskRequest {
  readonly requestId: string;
  readonly output: ArrayLike<number>;
  /** Where the grammar's part of the output starts (past any thinking block). */
  readonly answerStart: number;
  /** Speculative decoding's proposals for the row's next tokens: masks at their positions too (MaskJob.drafts). */
  readonly drafts?: readonly number[];
}

export interface TryRequest extends MaskRequest {
  /** The row's best tokens by processed logit, best first (ties by ascending id), sampled without a mask. */
  readonly candidates: ArrayLike<number>;
}

/** The candidate its grammar took (the row's token), or the mask to choose under (`RowMask`), or why the row cannot go on. */
export type TryOutcome = { readonly token: number } | RowMask;

export interface GrammarStats {
  readonly masks: number;
  /** Greedy rows whose candidates were tried on their matcher before any mask (each miss costs one of `masks`). */
  readonly tried: number;
  /** Time the grammar worker spent computing masks, ms. */
  readonly maskMs: number;
  /** Time the engine waited for masks after its forward pass, ms: the part of maskMs the overlap did not hide. */
  readonly waitMs: number;
}

/** Tokens shared at the start of `a` and `b`. */
function commonPrefix(a: readonly number[], b: readonly number[]): number {
  let n = 0;
  while (n < a.length && n < b.length && a[n] === b[n]) n++;
  return n;
}

/** output[from..] as an array. */
const tail = (output: ArrayLike<number>, from: number): number[] => Array.from({ length: Math.max(0, output.length - from) }, (_, i) => output[from + i]!);

export class ConstrainedRows {
  private client: GrammarWorkerClient | null = null;
  private readonly rows = new Map<string, Row>();
  private totals = { masks: 0, tried: 0, maskMs: 0, waitMs: 0 };

  constructor(private readonly options: ConstrainedRowsOptions) {}

  has(requestId: string): boolean {
    return this.rows.has(requestId);
  }

  get size(): number {
    return this.rows.size;
  }

  /**
   * Compiles the request's grammar on the worker (a cache hit costs nothing) and makes its
   * matcher. Rejects with INVALID_ARG naming the feature when the grammar cannot be compiled.
   */
  async open(request: GenerateRequest): Promise<void> {
    const spec = request.grammar;
    if (!spec) throw new Error(`request ${request.id} has no grammar`);
    // The grammar may end only where the request may: on its EOS or stop tokens (none named: the tokenizer's end tokens).
    const stopIds = [...new Set([...request.stop.eosTokenIds, ...request.stop.stopTokenIds])];
    await this.worker().open(request.id, spec, stopIds);
    this.rows.set(request.id, { stopIds: new Set(stopIds), mirror: [], failed: null, speculation: FRESH_SPECULATION });
  }

  /** Posts the masks of `requests` (constrained ones; others are skipped) and resolves with them and the worker's time, ms. */
  startMasks(requests: readonly MaskRequest[]): Promise<{ readonly masks: Map<string, RowMask>; readonly ms: number }> {
    const result = new Map<string, RowMask>();
    const { jobs, answers } = this.catchUps(requests, result);
    if (jobs.length === 0) return Promise.resolve({ masks: result, ms: 0 });
    return this.worker()
      .masks(jobs)
      .then(
        (batch) => {
          for (const m of batch.masks) this.settle(m.requestId, m.mask, m.accepted, m.refused, answers.get(m.requestId)!, result, m.draftMasks);
          this.totals.masks += batch.masks.length;
          this.totals.maskMs += batch.ms;
          return { masks: result, ms: batch.ms };
        },
        (error: unknown) => this.failJobs(jobs, error, result),
      );
  }

  /**
   * Tries each row's unmasked greedy candidates on its matcher: a row whose grammar takes one
   * keeps it as its token (the matcher now holds it); a row that takes none comes back with the
   * mask to choose under.
   */
  async tryCandidates(requests: readonly TryRequest[]): Promise<{ readonly outcomes: Map<string, TryOutcome>; readonly ms: number }> {
    const failures = new Map<string, RowMask>();
    const { jobs, answers } = this.catchUps(requests, failures);
    const outcomes = new Map<string, TryOutcome>(failures);
    if (jobs.length === 0) return { outcomes, ms: 0 };
    const candidates = new Map(requests.map((r) => [r.requestId, Array.from(r.candidates)]));
    try {
      const batch = await this.worker().tryCandidates(jobs.map((job) => ({ ...job, candidates: candidates.get(job.requestId)! })));
      for (const r of batch.results) {
        const answer = answers.get(r.requestId)!;
        const row = this.rows.get(r.requestId);
        if (row && r.known && !r.refused) row.speculation = afterTry(row.speculation, answer.length, r.token !== null ? { hit: true } : { hit: false, ms: r.ms });
        if (r.token !== null && row) {
          row.mirror = [...answer, r.token];
          outcomes.set(r.requestId, { token: r.token });
        } else if (r.mask === null && r.known && !r.refused) {
          throw new Error(`the grammar worker took none of request ${r.requestId}'s candidates and sent no mask`);
        } else {
          const settled = new Map<string, RowMask>();
          this.settle(r.requestId, r.mask, r.accepted, r.refused, answer, settled);
          outcomes.set(r.requestId, settled.get(r.requestId)!);
        }
      }
      this.totals.tried += batch.results.length;
      this.totals.masks += batch.results.filter((r) => r.mask !== null).length;
      this.totals.maskMs += batch.ms;
      return { outcomes, ms: batch.ms };
    } catch (error) {
      const failed = this.failJobs(jobs, error, new Map());
      for (const [id, outcome] of failed.masks) outcomes.set(id, outcome);
      return { outcomes, ms: 0 };
    }
  }

  /** Each live row's catch-up job (its mirror optimistically advanced); rows that cannot go on land in `failed`. */
  private catchUps(requests: readonly MaskRequest[], failed: Map<string, RowMask>): { jobs: MaskJob[]; answers: Map<string, readonly number[]> } {
    const jobs: MaskJob[] = [];
    const answers = new Map<string, readonly number[]>();
    for (const { requestId, output, answerStart, drafts } of requests) {
      const row = this.rows.get(requestId);
      if (!row) continue;
      if (row.failed !== null) {
        failed.set(requestId, { failed: row.failed });
        continue;
      }
      const tokens = tail(output, answerStart);
      const common = commonPrefix(row.mirror, tokens);
      jobs.push({ requestId, rollBack: row.mirror.length - common, accept: tokens.slice(common), ...(drafts ? { drafts } : {}) });
      answers.set(requestId, tokens);
      row.mirror = tokens;
    }
    return { jobs, answers };
  }

  private failJobs(jobs: readonly MaskJob[], error: unknown, into: Map<string, RowMask>): { masks: Map<string, RowMask>; ms: number } {
    const reason = error instanceof Error ? error.message : String(error);
    for (const job of jobs) this.fail(job.requestId, reason, into);
    return { masks: into, ms: 0 };
  }

  /** Whether the row's next greedy token (at answer position `position`) is chosen by trying candidates before a mask. */
  shouldTry(requestId: string, position: number): boolean {
    const row = this.rows.get(requestId);
    return row !== undefined && shouldTry(row.speculation, position);
  }

  /** True when `tokenId` completes the request's grammar: a stop token its mask allowed (or, with no mask, its matcher took). */
  endsGrammar(requestId: string, tokenId: number, mask: Int32Array | null): boolean {
    const row = this.rows.get(requestId);
    return (row?.stopIds.has(tokenId) ?? false) && (mask === null || maskAllows(mask, tokenId));
  }

  /** Counts time the engine spent waiting for masks after the forward pass. */
  recordWait(ms: number): void {
    this.totals.waitMs += ms;
  }

  stats(): GrammarStats {
    return { ...this.totals };
  }

  /** Frees a finished or aborted request's matcher (no-op when it has none). */
  release(requestId: string): void {
    if (!this.rows.delete(requestId)) return;
    this.client?.release(requestId);
  }

  /** Stops the grammar worker. */
  async close(): Promise<void> {
    await this.client?.close();
    this.client = null;
  }

  /** The grammar worker's thread while one runs: fault-injection tests terminate it. */
  get workerThread() {
    return this.client?.thread;
  }

  private settle(requestId: string, mask: Int32Array | null, accepted: number, refused: boolean, answer: readonly number[], into: Map<string, RowMask>, draftMasks?: readonly Int32Array[]): void {
    const row = this.rows.get(requestId);
    if (!row) return;
    row.mirror = answer.slice(0, accepted);
    if (mask === null) this.fail(requestId, 'the grammar worker has no matcher for the request', into);
    else if (refused) this.fail(requestId, `the grammar refused token ${answer[accepted]} that its own mask allowed`, into);
    else into.set(requestId, draftMasks ? { mask, draftMasks } : { mask });
  }

  private fail(requestId: string, reason: string, into: Map<string, RowMask>): void {
    const row = this.rows.get(requestId);
    if (row) row.failed = reason;
    into.set(requestId, { failed: reason });
  }

  private worker(): GrammarWorkerClient {
    const { tokenizerPath, vocabSize, compileTimeoutSecs } = this.options;
    if (tokenizerPath === undefined) throw invalidArg('this engine has no tokenizer.json, so it cannot constrain output to a grammar');
    this.client ??= new GrammarWorkerClient({ tokenizerPath, vocabSize, ...(compileTimeoutSecs ? { compileTimeoutSecs } : {}) }, (reason) => {
      // Every matcher died with the worker: the rows they served cannot continue.
      for (const row of this.rows.values()) row.failed ??= reason;
    });
    return this.client;
  }
}
