// The grammar side of the engine: one ConstraintMatcher per constrained request, over a
// GrammarEngine opened on the first constrained request (an engine that never sees one never
// builds the tokenizer info). A matcher lives from the request's admission to its finish or
// abort. It survives preemption, because the output tokens do: before each mask the matcher is
// synced to the request's output (syncTo), which is a no-op in the normal step and a rebuild
// after anything that changed the output behind its back.

import type { GenerateRequest } from '../contracts/generate.js';
import { invalidArg } from '../errors.js';
import { GrammarEngine } from '../grammar/grammar-engine.js';
import type { ConstraintMatcher } from '../grammar/matcher.js';

export interface ConstrainedRowsOptions {
  /** The model's tokenizer.json; absent, a constrained request is refused. */
  readonly tokenizerPath: string | undefined;
  /** Logits row length. */
  readonly vocabSize: number;
}

/** What happened when a sampled token was given to its matcher. */
export type AcceptOutcome = 'continues' | 'terminated' | 'refused';

export class ConstrainedRows {
  private engine: Promise<GrammarEngine> | null = null;
  private readonly matchers = new Map<string, ConstraintMatcher>();
  private maskMsTotal = 0;
  private masksTotal = 0;

  constructor(private readonly options: ConstrainedRowsOptions) {}

  has(requestId: string): boolean {
    return this.matchers.has(requestId);
  }

  get size(): number {
    return this.matchers.size;
  }

  /**
   * Compiles the request's grammar (a cache hit costs nothing) and makes its matcher. Rejects with
   * INVALID_ARG naming the feature when the grammar cannot be compiled; nothing is kept then.
   */
  async open(request: GenerateRequest): Promise<void> {
    const spec = request.grammar;
    if (!spec) throw new Error(`request ${request.id} has no grammar`);
    const engine = await this.grammarEngine();
    const constraint = await engine.compile(spec);
    // The grammar may end only where the request may: on its EOS or stop tokens (none named: the tokenizer's end tokens).
    const stopIds = [...new Set([...request.stop.eosTokenIds, ...request.stop.stopTokenIds])];
    this.matchers.set(request.id, await engine.matcher(constraint, stopIds));
  }

  /** The next-token bitmask of `requestId` after `outputTokenIds`; null when it is not constrained. */
  async mask(requestId: string, outputTokenIds: ArrayLike<number>): Promise<Int32Array | null> {
    const matcher = this.matchers.get(requestId);
    if (!matcher) return null;
    // False means the output broke the grammar earlier; the mask then continues from the longest valid prefix.
    matcher.syncTo(outputTokenIds);
    return matcher.nextTokenMask();
  }

  /** Advances `requestId`'s matcher by a sampled token. */
  accept(requestId: string, tokenId: number): AcceptOutcome {
    const matcher = this.matchers.get(requestId);
    if (!matcher) return 'continues';
    if (!matcher.accept(tokenId)) return 'refused';
    return matcher.isTerminated() ? 'terminated' : 'continues';
  }

  /** Frees a finished or aborted request's matcher (no-op when it has none). */
  release(requestId: string): void {
    const matcher = this.matchers.get(requestId);
    if (!matcher) return;
    matcher.dispose();
    this.matchers.delete(requestId);
  }

  /** Counts one step's mask work. */
  recordMasks(count: number, ms: number): void {
    this.masksTotal += count;
    this.maskMsTotal += ms;
  }

  /** Masks computed since start and the time they took, ms. */
  stats(): { readonly masks: number; readonly maskMs: number } {
    return { masks: this.masksTotal, maskMs: this.maskMsTotal };
  }

  private grammarEngine(): Promise<GrammarEngine> {
    const { tokenizerPath, vocabSize } = this.options;
    if (tokenizerPath === undefined) return Promise.reject(invalidArg('this engine has no tokenizer.json, so it cannot constrain output to a grammar'));
    if (!this.engine) {
      this.engine = GrammarEngine.open({ tokenizerPath, logitsVocabSize: vocabSize });
      // A failed open is retried by the next constrained request rather than cached.
      this.engine.catch(() => (this.engine = null));
    }
    return this.engine;
  }
}
