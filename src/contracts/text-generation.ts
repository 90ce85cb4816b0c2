// The text side of a generation, as the LLM backend takes and gives it on the main thread: the
// prompt (chat messages, text or token ids), the request once the input processor prepared it,
// and the text events the output processor streams back. Every front end speaks these types;
// they never cross to the engine worker (that is GenerateRequest and SequenceUpdate in generate.ts).

import type { FinishReason, GenerateRequest, PromptTokenLogprob, TokenLogprob } from './generate.js';

export interface ChatContentPart {
  readonly type: string;
  readonly text?: string;
}

export interface ChatMessage {
  /** system, developer (as system where the template drops or refuses developer), user, assistant or tool. */
  readonly role: string;
  /** A string, or text parts (joined with newlines); null for an assistant turn with only tool calls (passed to the template as null). */
  readonly content?: string | readonly ChatContentPart[] | null;
  readonly name?: string;
  readonly tool_calls?: readonly unknown[];
  readonly tool_call_id?: string;
  /** An assistant turn's thinking text; rendered by templates that read it (Qwen3's). */
  readonly reasoning_content?: string | null;
  /** The newer name some clients send for reasoning_content; the template sees it as reasoning_content. */
  readonly reasoning?: string | null;
}

export interface ChatTemplateOptions {
  /** Append the assistant turn's opening (default true). */
  readonly addGenerationPrompt?: boolean;
  /** Tool (function) definitions, passed to the template as `tools`. */
  readonly tools?: readonly unknown[] | null;
  /** Extra template variables, e.g. { enable_thinking: false } for Qwen3. */
  readonly chatTemplateKwargs?: Readonly<Record<string, unknown>> | null;
}

export type PromptInput =
  | ({ readonly kind: 'chat'; readonly messages: readonly ChatMessage[] } & ChatTemplateOptions)
  /** Completions: special tokens (a BOS where the tokenizer's post-processor adds one) by default. */
  | { readonly kind: 'text'; readonly text: string; readonly addSpecialTokens?: boolean }
  /** `param`: the field that carried the ids, named by their errors (default `prompt`; vLLM's generate route: `token_ids`). */
  | { readonly kind: 'tokens'; readonly tokenIds: readonly number[]; readonly param?: string };

/** What the output processor needs: text-level options that never reach the engine. */
export interface OutputOptions {
  /** Stop strings, matched on the detokenized text; never empty strings. */
  readonly stop: readonly string[];
  readonly includeStopStrInOutput: boolean;
  readonly skipSpecialTokens: boolean;
}

export interface ProcessedRequest {
  readonly request: GenerateRequest;
  /** Stop strings and detokenization options for the output processor. */
  readonly output: OutputOptions;
  /** The rendered chat or text prompt; null for a token-id prompt. */
  readonly promptText: string | null;
  /** The caller's name for the field that set request.grammar: the engine's refusal of it names this field. */
  readonly grammarParam?: string;
}

export interface Usage {
  readonly promptTokens: number;
  readonly completionTokens: number;
  /** Prompt tokens served from the prefix cache. */
  readonly cachedTokens: number;
  /** Completion tokens inside the thinking block; absent when the request had no ThinkingSpec (no reasoning parser). */
  readonly reasoningTokens?: number;
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
  /**
   * With logprobs asked, the logprob of the EOS / stop token that finished the request (left out of
   * tokenIds and logprobs; the token itself is stopReason): token-out callers return it with the token.
   */
  readonly stopTokenLogprob?: TokenLogprob;
  /** With prompt logprobs asked, on the first event: one per prompt token, the first null. */
  readonly promptLogprobs?: readonly (PromptTokenLogprob | null)[];
  /** Null until the last event. */
  readonly finishReason: FinishReason | null;
  /** The stop string or stop token id that finished the request, if any (vLLM's stop_reason). */
  readonly stopReason: string | number | null;
  readonly usage: Usage;
  readonly timings: GenerationTimings;
}
