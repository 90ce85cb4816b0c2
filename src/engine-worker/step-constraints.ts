// One step's token constraints, decided before the forward pass and read by the sampler after
// it: grammar masks of constrained rows (computed on the grammar worker while ORT runs, see
// constrained-rows.ts) and the tokens a thinking block forces (thinking-block.ts). A row whose
// grammar cannot go on is listed in `failed`: the engine ends it rather than let it continue
// outside its grammar.
//
// Greedy rows without logprobs skip the mask: greedy picks the unmasked argmax whenever the
// grammar allows it (the mask only removes tokens, and the sampler's processors never raise a
// −∞), so the row is sampled unmasked and its token tried on the matcher (verify()); only a
// refused token costs a mask, under which the row is chosen again. The masks this skips are the
// costly ones: inside a JSON string nearly every token is allowed and xgrammar checks them all.
// A row whose tries keep being refused backs off to masks first (speculation.ts), so a model that
// does not follow its grammar keeps the masks overlapped with the forward pass.

import type { ThinkingSpec } from '../contracts/generate.js';
import { allowToken, onlyToken } from '../contracts/token-mask.js';
import { SAMPLING_EPS, type SamplerRow } from '../sampler/sampler.js';
import type { ConstrainedRows, MaskRequest, RowMask, TryRequest } from './constrained-rows.js';
import { type ThinkingDirective, thinkingDirective } from './thinking-block.js';

const ANSWER: ThinkingDirective = { kind: 'answer', answerStart: 0, alsoAllow: null };

export interface StepGrammarWork {
  /** Rows masked by their grammar. */
  readonly count: number;
  /** Greedy rows whose unmasked token was tried on the matcher first, and how many of those it refused (each then masked). */
  readonly tried: number;
  readonly refused: number;
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
  private work = { count: 0, tried: 0, refused: 0, ms: 0, waitMs: 0 };

  private constructor(
    private readonly rows: ConstrainedRows,
    private readonly directives: ReadonlyMap<string, ThinkingDirective>,
    private readonly pending: ReturnType<ConstrainedRows['startMasks']> | null,
    /** Greedy grammar rows sampled unmasked, to verify after sampling: their answer's place in the output. */
    private readonly speculative: ReadonlyMap<string, MaskRequest>,
  ) {}

  /** Decides each row's directive and posts the grammar jobs; call before the forward pass. */
  static start(rows: ConstrainedRows, contexts: readonly SamplerRow[], thinkingOf: (requestId: string) => ThinkingSpec | null | undefined, vocabSize: number): StepConstraints {
    const directives = new Map<string, ThinkingDirective>();
    const requests: MaskRequest[] = [];
    const speculative = new Map<string, MaskRequest>();
    const forced = new Map<string, Int32Array>();
    for (const { requestId, outputTokenIds, params } of contexts) {
      const spec = thinkingOf(requestId);
      const constrained = rows.has(requestId);
      if (!spec && !constrained) continue;
      const directive = spec ? thinkingDirective(spec, outputTokenIds, constrained) : ANSWER;
      directives.set(requestId, directive);
      if (directive.kind === 'force') forced.set(requestId, onlyToken(vocabSize, directive.tokenId));
      else if (directive.kind === 'answer' && constrained) {
        const request = { requestId, output: outputTokenIds, answerStart: directive.answerStart };
        // Logprobs describe the masked distribution, and an opening that competes with the grammar needs the mask: those rows are masked first.
        const greedy = params.temperature < SAMPLING_EPS && !params.logprobs && directive.alsoAllow === null;
        if (greedy && rows.shouldTry(requestId, outputTokenIds.length - directive.answerStart)) speculative.set(requestId, request);
        else requests.push(request);
      }
    }
    const step = new StepConstraints(rows, directives, requests.length > 0 ? rows.startMasks(requests) : null, speculative);
    for (const [id, mask] of forced) step.masks.set(id, mask);
    return step;
  }

  /** Waits for the grammar masks (after the forward pass: the wait is what the overlap did not hide). */
  async ready(): Promise<void> {
    if (!this.pending) return;
    const waitStarted = performance.now();
    const { masks, ms } = await this.pending;
    this.recordWait(performance.now() - waitStarted, ms);
    for (const [requestId, result] of masks) this.take(requestId, result);
    this.work.count = this.grammarRows.size;
  }

  /** True when the row is sampled without a mask first and verified after (see the file comment). */
  isSpeculative(requestId: string): boolean {
    return this.speculative.has(requestId);
  }

  /**
   * Tries the speculative rows' tokens on their matchers; returns the rows whose token was
   * refused, with the mask to choose again under (their masks also answer maskFor from now on).
   */
  async verify(tokens: ReadonlyMap<string, number>): Promise<Map<string, Int32Array>> {
    const again = new Map<string, Int32Array>();
    const requests: TryRequest[] = [...this.speculative.values()].filter((r) => tokens.has(r.requestId)).map((r) => ({ ...r, token: tokens.get(r.requestId)! }));
    if (requests.length === 0) return again;
    const started = performance.now();
    const { outcomes, ms } = await this.rows.tryTokens(requests);
    this.recordWait(performance.now() - started, ms);
    this.work.tried += requests.length;
    for (const [requestId, outcome] of outcomes) {
      if ('accepted' in outcome) continue;
      if ('mask' in outcome) {
        this.work.refused++;
        again.set(requestId, outcome.mask);
      }
      this.take(requestId, outcome);
    }
    this.work.count = this.grammarRows.size;
    return again;
  }

  /** The mask the sampler applies to the row, or null for none. */
  maskFor(requestId: string): Int32Array | null {
    return this.masks.get(requestId) ?? null;
  }

  /** True when `tokenId` completes the row's grammar (after verify(), for speculative rows). */
  endsGrammar(requestId: string, tokenId: number): boolean {
    if (this.grammarRows.has(requestId)) return this.rows.endsGrammar(requestId, tokenId, this.masks.get(requestId)!);
    // A speculative row whose token its matcher took.
    return this.speculative.has(requestId) && !this.failures.has(requestId) && this.rows.endsGrammar(requestId, tokenId, null);
  }

  /** Rows that must end, with why. */
  get failed(): ReadonlyMap<string, string> {
    return this.failures;
  }

  /** The step's grammar work; undefined when no row had a grammar. */
  get grammarWork(): StepGrammarWork | undefined {
    return this.work.count > 0 || this.work.tried > 0 ? { ...this.work } : undefined;
  }

  private recordWait(waitMs: number, workerMs: number): void {
    this.rows.recordWait(waitMs);
    this.work.waitMs += waitMs;
    this.work.ms += workerMs;
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
