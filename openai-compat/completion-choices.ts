// Each completions choice's running state as its events arrive: the echoed prompt (with its
// logprobs) ahead of the first piece, text offsets for the logprobs, vLLM's prompt_logprobs, and
// the cumulative logprob best_of ranks candidates by.

import type { GenerationEvent, ProcessedRequest } from '../src/contracts/text-generation.js';
import { cumulativeLogprob, pickBest } from './best-of.js';
import { appendCompletionLogprobs, completionLogprobs, type CompletionLogprobs, type TokenSpelling } from './logprobs.js';
import { echoedPromptLogprobs, vllmPromptLogprobs, type VllmPromptLogprobs } from './prompt-logprobs.js';

export interface ChoicePiece {
  readonly text: string;
  readonly logprobs: CompletionLogprobs | null;
  /** vLLM's prompt_logprobs, on the choice's first piece when asked. */
  readonly promptLogprobs: VllmPromptLogprobs | null;
}

export interface ChoiceOptions {
  /** The echoed prompt's text per choice ('' without echo). */
  readonly echoed: readonly string[];
  readonly echo: boolean;
  /** Alternatives per token (completions' integer logprobs); null: no logprobs in the answer. */
  readonly topLogprobs: number | null;
  /** vLLM's prompt_logprobs count; null when not asked. */
  readonly promptLogprobs: number | null;
}

interface ChoiceState {
  text: string;
  logprobs: CompletionLogprobs | null;
  /** Character offset of the next token in the choice's text (text_offset). */
  offset: number;
  finishReason: string | null;
  started: boolean;
  promptLogprobs: VllmPromptLogprobs | null;
  /** Sum of the sampled tokens' logprobs (best_of's score). */
  cumulative: number;
}

const emptyLogprobs = (): CompletionLogprobs => ({ tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] });

export class CompletionChoices {
  private readonly state: ChoiceState[];

  constructor(
    private readonly choices: readonly ProcessedRequest[],
    private readonly text: TokenSpelling,
    private readonly options: ChoiceOptions,
  ) {
    this.state = options.echoed.map((e) => ({
      text: '',
      logprobs: options.topLogprobs === null ? null : emptyLogprobs(),
      offset: e.length,
      finishReason: null,
      started: false,
      promptLogprobs: null,
      cumulative: 0,
    }));
  }

  /** The wire piece for one event: the echoed prompt (and its logprobs) leads the choice's first. */
  piece(index: number, event: GenerationEvent): ChoicePiece {
    const { echo, topLogprobs, promptLogprobs: vllmCount } = this.options;
    const choice = this.state[index]!;
    const first = !choice.started;
    choice.started = true;
    const text = (first ? this.options.echoed[index]! : '') + event.text;
    const prompt = first && event.promptLogprobs ? event.promptLogprobs : null;
    const promptLogprobs = prompt && vllmCount !== null ? vllmPromptLogprobs(prompt, this.text, vllmCount) : null;
    if (topLogprobs === null) return { text, logprobs: null, promptLogprobs };
    const logprobs = emptyLogprobs();
    if (first && echo) appendCompletionLogprobs(logprobs, echoedPromptLogprobs(this.choices[index]!.request.promptTokenIds, prompt ?? [], this.text, topLogprobs).logprobs);
    if (event.logprobs) {
      const generated = completionLogprobs(event.logprobs, this.text, choice.offset);
      choice.offset = generated.offset;
      appendCompletionLogprobs(logprobs, generated.logprobs);
    }
    return { text, logprobs, promptLogprobs };
  }

  /** Folds one event into the choice's whole answer (non-streaming). */
  collect(index: number, event: GenerationEvent): void {
    const { text, logprobs, promptLogprobs } = this.piece(index, event);
    const choice = this.state[index]!;
    choice.text += text;
    choice.promptLogprobs ??= promptLogprobs;
    if (event.logprobs) choice.cumulative += cumulativeLogprob(event.logprobs);
    if (logprobs && choice.logprobs) appendCompletionLogprobs(choice.logprobs, logprobs);
    choice.finishReason = event.finishReason;
  }

  /** The answer's choices: all, or with best_of the best n of each prompt's candidates, renumbered. */
  answer(candidates: number, n: number): Record<string, unknown>[] {
    const order =
      candidates === n
        ? this.state
        : pickBest(
            this.state.map((c) => c.cumulative),
            candidates,
            n,
          ).map((i) => this.state[i]!);
    return order.map((c, index) => ({
      index,
      text: c.text,
      logprobs: c.logprobs,
      finish_reason: c.finishReason,
      ...(this.options.promptLogprobs !== null ? { prompt_logprobs: c.promptLogprobs } : {}),
    }));
  }
}
