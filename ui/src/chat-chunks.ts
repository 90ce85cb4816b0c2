// The playground's chat request and how its streamed chunks fold into what a message shows
// (reasoning apart from the answer, token counts, TTFT, tokens/s). Pure (no DOM, no fetch).

export interface SamplingControls {
  readonly temperature?: number;
  readonly top_p?: number;
  readonly top_k?: number;
  readonly max_tokens?: number;
  readonly seed?: number;
  readonly stop?: readonly string[];
  readonly ignore_eos?: boolean;
  /** A JSON schema the answer must follow (response_format json_schema). */
  readonly schema?: Record<string, unknown>;
}

export interface ChatMessage {
  readonly role: 'system' | 'user' | 'assistant';
  readonly content: string;
}

export interface StreamProgress {
  content: string;
  reasoning: string;
  finishReason: string | null;
  promptTokens: number | null;
  completionTokens: number | null;
  /** Milliseconds from sending to the first content or reasoning delta. */
  ttftMs: number | null;
  tokensPerSec: number | null;
  /** Deltas received (a stand-in for tokens until usage arrives). */
  deltas: number;
}

export interface ChatChunk {
  readonly choices?: readonly { readonly delta?: { readonly content?: string | null; readonly reasoning_content?: string | null }; readonly finish_reason?: string | null }[];
  readonly usage?: { readonly prompt_tokens?: number; readonly completion_tokens?: number } | null;
}

export function chatRequest(model: string, messages: readonly ChatMessage[], controls: SamplingControls): Record<string, unknown> {
  const { schema, stop, ...sampling } = controls;
  return {
    model,
    messages,
    stream: true,
    stream_options: { include_usage: true },
    ...Object.fromEntries(Object.entries(sampling).filter(([, v]) => v !== undefined && !(typeof v === 'number' && Number.isNaN(v)))),
    ...(stop && stop.length > 0 ? { stop } : {}),
    ...(schema ? { response_format: { type: 'json_schema', json_schema: { name: 'playground', schema } } } : {}),
  };
}

/** Folds one chunk into the progress; `elapsedMs` is the time since the request was sent. */
export function applyChunk(progress: StreamProgress, chunk: ChatChunk, elapsedMs: number): void {
  for (const choice of chunk.choices ?? []) {
    const { content, reasoning_content: reasoning } = choice.delta ?? {};
    if (content || reasoning) {
      progress.ttftMs ??= elapsedMs;
      progress.deltas++;
    }
    if (content) progress.content += content;
    if (reasoning) progress.reasoning += reasoning;
    if (choice.finish_reason) progress.finishReason = choice.finish_reason;
  }
  if (chunk.usage) {
    progress.promptTokens = chunk.usage.prompt_tokens ?? null;
    progress.completionTokens = chunk.usage.completion_tokens ?? null;
  }
  const tokens = progress.completionTokens ?? progress.deltas;
  const decodingMs = progress.ttftMs === null ? 0 : elapsedMs - progress.ttftMs;
  if (tokens > 1 && decodingMs > 0) progress.tokensPerSec = ((tokens - 1) * 1000) / decodingMs;
}

export const emptyProgress = (): StreamProgress => ({ content: '', reasoning: '', finishReason: null, promptTokens: null, completionTokens: null, ttftMs: null, tokensPerSec: null, deltas: 0 });
