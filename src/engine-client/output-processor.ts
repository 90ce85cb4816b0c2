// The main-thread half of a generation: turns one request's engine updates into text events —
// incremental detokenization (never a broken character), stop strings across token boundaries
// (the engine is told to stop), finish reason, usage and timestamps.

import type { SequenceUpdate, ThinkingSpec } from '../contracts/generate.js';
import type { GenerationEvent, OutputOptions } from '../contracts/text-generation.js';
import type { TokenDecoder } from '../contracts/tokenizer.js';
import { IncrementalDetokenizer } from './detokenizer.js';
import { StopStringMatcher } from './stop-strings.js';
import { ThinkingTokenCounter } from '../reasoning/index.js';

export class OutputProcessor {
  private readonly detokenizer: IncrementalDetokenizer;
  private readonly stops: StopStringMatcher;
  private stopString: string | null = null;
  /** Counts the tokens inside the thinking block, for usage; null without a ThinkingSpec. */
  private readonly thinking: ThinkingTokenCounter | null;

  constructor(decoder: TokenDecoder, promptTokenIds: readonly number[], options: OutputOptions, thinking: ThinkingSpec | null = null) {
    this.thinking = thinking ? new ThinkingTokenCounter(thinking) : null;
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
    this.thinking?.push(tokenIds);
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
    const stopTokenLogprob = update.logprobs && update.stopTokenId !== null ? update.logprobs[tokenIds.length] : undefined;
    return {
      text,
      tokenIds,
      logprobs,
      ...(stopTokenLogprob ? { stopTokenLogprob } : {}),
      ...(update.promptLogprobs ? { promptLogprobs: update.promptLogprobs } : {}),
      finishReason,
      stopReason: this.stopString ?? update.stopTokenId,
      usage: {
        promptTokens: update.numPromptTokens,
        completionTokens: update.numOutputTokens,
        cachedTokens: update.numCachedTokens,
        ...(this.thinking ? { reasoningTokens: this.thinking.count } : {}),
      },
      timings: { arrivalMs: update.arrivalTimeMs, scheduledMs: update.scheduledTimeMs, firstTokenMs: update.firstTokenTimeMs, tokenMs: timeMs },
    };
  }
}
