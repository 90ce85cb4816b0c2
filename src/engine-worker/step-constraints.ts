// One step's token constraints, decided before the forward pass and read by the sampler after
// it: grammar masks of constrained rows (computed on the grammar worker while ORT runs, see
// constrained-rows.ts) and the tokens a thinking block forces (thinking-block.ts). A row whose
// grammar cannot go on is listed in `failed`: the engine ends it rather than let it continue
// outside its grammar.
//
// Greedy rows without logprobs skip the mask: greedy under a mask picks the first allowed token in
// (processed logit descending, id ascending) order — the mask only removes tokens, and the
// sampler's processors never raise a −∞ — so the row is sampled unmasked and its best candidates
// are tried on the matcher in that order (offer(), verify()); the first one taken is exactly the masked
// choice. Only a row whose grammar takes none costs a mask, under which it is chosen again. The
// masks this skips are the costly ones: inside a JSON string nearly every token is allowed and
// xgrammar checks them all, while one of a few top candidates is almost always allowed there.
// Where the grammar allows few tokens the candidates miss but the mask is cheap; a row whose
// misses are costly backs off to masks first (speculation.ts), keeping them overlapped with the
// forward pass.

import type { ThinkingSpec } from '../contracts/generate.js';
import { allowToken, onlyToken } from '../contracts/token-mask.js';
import { SAMPLING_EPS, type SamplerRow } from '../sampler/sampler.js';
import type { ConstrainedRows, MaskRequest, RowMask } from './constrained-rows.js';
import { type ThinkingDirective, thinkingDirective } from './thinking-block.js';

/** A speculative row's token, taken by its grammar, or the mask to choose it under. */
export type SpeculativeChoice = { readonly token: number } | { readonly mask: Int32Array };

const ANSWER: ThinkingDirective = { kind: 'answer', answerStart: 0, alsoAllow: null };

export interface StepGrammarWork {
  /** Rows masked by their grammar. */
  readonly count: number;
  /** Greedy rows whose unmasked candidates were tried on the matcher first, and how many of those took none (each then masked). */
  readonly tried: number;
  readonly refused: number;
  /** The grammar worker's time on them, ms. */
  readonly ms: number;
  /** How long the engine waited for them after the forward pass, ms. */
  readonly waitMs: number;
}

export class StepConstraints {
  private readonly masks = new Map<string, Int32Array>();
  /** Rows with proposals: the mask after each proposal their grammar took (MaskResult.draftMasks). */
  private readonly draftMasks = new Map<string, readonly Int32Array[]>();
  /** Rows whose mask comes from their grammar: only these can end it. */
  private readonly grammarRows = new Set<string>();
  private readonly failures = new Map<string, string>();
  private work = { count: 0, tried: 0, refused: 0, ms: 0, waitMs: 0 };
  /** The speculative rows' tries posted so far this step (offer()). */
  private readonly offers: ReturnType<ConstrainedRows['tryCandidates']>[] = [];

  private constructor(
    private readonly rows: ConstrainedRows,
    private readonly directives: ReadonlyMap<string, ThinkingDirective>,
    private readonly pending: ReturnType<ConstrainedRows['startMasks']> | null,
    /** Greedy grammar rows sampled unmasked, to verify after sampling: their answer's place in the output. */
    private readonly speculative: ReadonlyMap<string, MaskRequest>,
  ) {}

  /**
   * Decides each row's directive and posts the grammar jobs; call before the forward pass. A row
   * with proposals (`draftsOf`) gets its grammar's mask at each of their positions too, and is
   * never sampled unmasked first.
   */
  static start(
    rows: ConstrainedRows,
    contexts: readonly SamplerRow[],
    thinkingOf: (requestId: string) => ThinkingSpec | null | undefined,
    vocabSize: number,
    draftsOf: (requestId: string) => readonly number[] | undefined = () => undefined,
  ): StepConstraints {
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
        const drafts = draftsOf(requestId);
        const request: MaskRequest = { requestId, output: outputTokenIds, answerStart: directive.answerStart, ...(drafts ? { drafts } : {}) };
        // Logprobs describe the masked distribution, and an opening that competes with the grammar needs the mask: those rows are masked first.
        const greedy = params.temperature < SAMPLING_EPS && !params.logprobs && directive.alsoAllow === null;
        if (greedy && !drafts && rows.shouldTry(requestId, outputTokenIds.length - directive.answerStart)) speculative.set(requestId, request);
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
   * Posts a speculative row's candidates to its matcher as soon as the row is sampled, so the
   * grammar worker tries them while the engine samples the other rows: then only the last rows'
   * round trip is waited for (a cross-thread wake-up costs milliseconds when both cores are busy).
   */
  offer(requestId: string, candidates: ArrayLike<number>): void {
    const request = this.speculative.get(requestId);
    if (!request) throw new Error(`request ${requestId} is not sampled unmasked this step`);
    this.offers.push(this.rows.tryCandidates([{ ...request, candidates }]));
  }

  /**
   * Each offered row's choice: the candidate its grammar took, or the mask to choose again under
   * (the mask also answers maskFor from now on). Rows that cannot go on are absent (see `failed`).
   */
  async verify(): Promise<Map<string, SpeculativeChoice>> {
    const choices = new Map<string, SpeculativeChoice>();
    if (this.offers.length === 0) return choices;
    const started = performance.now();
    const replies = await Promise.all(this.offers);
    this.recordWait(
      performance.now() - started,
      replies.reduce((ms, reply) => ms + reply.ms, 0),
    );
    this.work.tried += this.offers.length;
    for (const { outcomes } of replies) {
      for (const [requestId, outcome] of outcomes) {
        if ('token' in outcome) {
          choices.set(requestId, outcome);
          continue;
        }
        if ('mask' in outcome) {
          this.work.refused++;
          choices.set(requestId, outcome);
        }
        this.take(requestId, outcome);
      }
    }
    this.work.count = this.grammarRows.size;
    return choices;
  }

  /** True when the row's token is anything but the sampler's own choice: a grammar or a thinking block has a say in it. */
  constrains(requestId: string): boolean {
    return this.directives.has(requestId);
  }

  /** The mask the sampler applies to the row, or null for none. */
  maskFor(requestId: string): Int32Array | null {
    return this.masks.get(requestId) ?? null;
  }

  /**
   * A row with proposals: its grammar's mask at each position the check may reach (index i: after
   * i proposals; it ends after the first proposal the grammar refuses or one that ends it); null
   * for an unconstrained row.
   */
  masksAlong(requestId: string): Int32Array[] | null {
    const first = this.masks.get(requestId);
    if (!first || !this.grammarRows.has(requestId)) return null;
    return [first, ...(this.draftMasks.get(requestId) ?? [])];
  }

  /** True when `tokenId`, sampled under `mask` (one of masksAlong's), completes the row's grammar. */
  endsGrammarUnder(requestId: string, tokenId: number, mask: Int32Array): boolean {
    return this.rows.endsGrammar(requestId, tokenId, mask);
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
    if (result.draftMasks) this.draftMasks.set(requestId, result.draftMasks);
    this.grammarRows.add(requestId);
  }
}
