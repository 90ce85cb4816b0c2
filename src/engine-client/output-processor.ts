// The main-thread half of a generation: turns one request's engine updates into text events —
// incremental detokenization (never a broken character), stop strings across token boundaries
// (the engine is told to stop), finish reason, usage and timestamps.

import type { FinishReason, SequenceUpdate, TokenLogprob } from '../contracts/generate.js';
import { IncrementalDetokenizer, type TokenDecoder } from './detokenizer.js';
import type { OutputOptions } from './sampling-params.js';
import { StopStringMatcher } from './stop-strings.js';

export interface Usage {
  readonly promptTokens: number;
  readonly completionTokens: number;
  /** Prompt tokens served from the prefix cache. */
  readonly cachedTokens: number;
}

export interface GenerationTimings {
  /** Arrival at the engine; every time here is ms on the engine's clock (about the epoch). */
  readonly arrivalMs: number;
  readonly scheduledMs: number | null;
  readonly firstTokenMs: number | null;
  /** When this event's tokens were produced. */
  readonly tokenMs: number;
}

/** One event per engine update of the request (one per step it got tokens in). */
export interface GenerationEvent {
  /** Newly released text; may be empty while a character or stop string is pending. */
  readonly text: string;
  /** Tokens produced this step (an EOS that finished the request is not included). */
  readonly tokenIds: readonly number[];
  readonly logprobs: readonly TokenLogprob[] | null;
  /** Null until the last event. */
  readonly finishReason: FinishReason | null;
  /** The stop string or stop token id that finished the request, if any (vLLM's stop_reason). */
  readonly stopReason: string | number | null;
  readonly usage: Usage;
  readonly timings: GenerationTimings;
}

export class OutputProcessor {
  private readonly detokenizer: IncrementalDetokenizer;
  private readonly stops: StopStringMatcher;
  private stopString: string | null = null;

  constructor(
    decoder: TokenDecoder,
    promptTokenIds: readonly number[],
    private readonly options: OutputOptions,
  ) {
    this.detokenizer = new IncrementalDetokenizer(decoder, { skipSpecialTokens: options.skipSpecialTokens, contextTokenIds: promptTokenIds });
    this.stops = new StopStringMatcher(options.stop, options.includeStopStrInOutput);
  }

  /** True once a stop string matched: the caller must end the request in the engine. */
  get stoppedByString(): boolean {
    return this.stopString !== null;
  }

  process(update: SequenceUpdate, timeMs: number): GenerationEvent {
    // An EOS / stop token that ended the request is not part of the text (vLLM hides it too).
    const tokenIds = update.stopTokenId !== null ? update.newTokenIds.slice(0, -1) : update.newTokenIds;
    let text = this.stopString === null ? this.detokenizer.push(tokenIds) : '';
    let finishReason = update.finishReason;
    if (finishReason !== null && this.stopString === null) text += this.detokenizer.flush();
    if (this.stopString === null) {
      const matched = this.stops.push(text);
      text = matched.text;
      if (matched.stopped !== null) {
        this.stopString = matched.stopped;
        finishReason = 'stop';
      } else if (finishReason !== null) {
        text += this.stops.flush();
      }
    }
    const logprobs = update.logprobs && update.stopTokenId !== null ? update.logprobs.slice(0, tokenIds.length) : update.logprobs;
    return {
      text,
      tokenIds,
      logprobs,
      finishReason,
      stopReason: this.stopString ?? update.stopTokenId,
      usage: { promptTokens: update.numPromptTokens, completionTokens: update.numOutputTokens, cachedTokens: update.numCachedTokens },
      timings: { arrivalMs: update.arrivalTimeMs, scheduledMs: update.scheduledTimeMs, firstTokenMs: update.firstTokenTimeMs, tokenMs: timeMs },
    };
  }
}
