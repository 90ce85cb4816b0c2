// One step's token constraints, decided before the forward pass and read by the sampler after
// it: grammar masks of constrained rows (computed on the grammar worker while ORT runs, see
// constrained-rows.ts) and the tokens a thinking block forces (thinking-block.ts). A row whose
// grammar cannot go on is listed in `failed`: the engine ends it rather than let it continue
// outside its grammar.

import type { ThinkingSpec } from '../contracts/generate.js';
import { allowToken, onlyToken } from '../contracts/token-mask.js';
import type { SamplerRow } from '../sampler/sampler.js';
import type { ConstrainedRows, MaskRequest, RowMask } from './constrained-rows.js';
import { type ThinkingDirective, thinkingDirective } from './thinking-block.js';

const ANSWER: ThinkingDirective = { kind: 'answer', answerStart: 0, alsoAllow: null };

export interface StepGrammarWork {
  /** Rows masked by their grammar. */
  readonly count: number;
  /** The grammar worker's time on them, ms. */
  readonly ms: number;
  /** How long the engine waited for them after the forward pass, ms. */
  readonly waitMs: number;
}

export class StepConstraints {
  private readonly masks = new Map<string, Int32Array>();
  /** Rows whose mask comes from their grammar: only these can end it. */
  private readonly grammarRows = new Set<string>();
  private readonly failures = new Map<string, string>();
  private work: StepGrammarWork | undefined;

  private constructor(
    private readonly rows: ConstrainedRows,
    private readonly directives: ReadonlyMap<string, ThinkingDirective>,
    private readonly pending: ReturnType<ConstrainedRows['startMasks']> | null,
  ) {}

  /** Decides each row's directive and posts the grammar jobs; call before the forward pass. */
  static start(rows: ConstrainedRows, contexts: readonly SamplerRow[], thinkingOf: (requestId: string) => ThinkingSpec | null | undefined, vocabSize: number): StepConstraints {
    const directives = new Map<string, ThinkingDirective>();
    const requests: MaskRequest[] = [];
    const forced = new Map<string, Int32Array>();
    for (const { requestId, outputTokenIds } of contexts) {
      const spec = thinkingOf(requestId);
      const constrained = rows.has(requestId);
      if (!spec && !constrained) continue;
      const directive = spec ? thinkingDirective(spec, outputTokenIds, constrained) : ANSWER;
      directives.set(requestId, directive);
      if (directive.kind === 'force') forced.set(requestId, onlyToken(vocabSize, directive.tokenId));
      else if (directive.kind === 'answer' && constrained) requests.push({ requestId, output: outputTokenIds, answerStart: directive.answerStart });
    }
    const step = new StepConstraints(rows, directives, requests.length > 0 ? rows.startMasks(requests) : null);
    for (const [id, mask] of forced) step.masks.set(id, mask);
    return step;
  }

  /** Waits for the grammar masks (after the forward pass: the wait is what the overlap did not hide). */
  async ready(): Promise<void> {
    if (!this.pending) return;
    const waitStarted = performance.now();
    const { masks, ms } = await this.pending;
    const waitMs = performance.now() - waitStarted;
    this.rows.recordWait(waitMs);
    for (const [requestId, result] of masks) this.take(requestId, result);
    this.work = { count: this.grammarRows.size, ms, waitMs };
  }

  /** The mask the sampler applies to the row, or null for none. */
  maskFor(requestId: string): Int32Array | null {
    return this.masks.get(requestId) ?? null;
  }

  /** True when `tokenId` completes the row's grammar. */
  endsGrammar(requestId: string, tokenId: number): boolean {
    return this.grammarRows.has(requestId) && this.rows.endsGrammar(requestId, tokenId, this.masks.get(requestId)!);
  }

  /** Rows that must end, with why. */
  get failed(): ReadonlyMap<string, string> {
    return this.failures;
  }

  /** The step's grammar work; undefined when no row had a grammar mask to compute. */
  get grammarWork(): StepGrammarWork | undefined {
    return this.work;
  }

  private take(requestId: string, result: RowMask): void {
    if ('failed' in result) {
      this.failures.set(requestId, result.failed);
      return;
    }
    const directive = this.directives.get(requestId);
    // A constrained row that may still open its thinking block: the opening competes with the grammar's first token.
    if (directive?.kind === 'answer' && directive.alsoAllow !== null) allowToken(result.mask, directive.alsoAllow);
    this.masks.set(requestId, result.mask);
    this.grammarRows.add(requestId);
  }
}
