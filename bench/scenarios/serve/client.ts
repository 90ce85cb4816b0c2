// One streamed completion, timed the way vLLM's serving benchmark times it: the clock starts just
// before the POST; the first event with non-empty `choices` is the first token (even if its text
// is empty), every later one adds a gap to the inter-token latencies, and the end-to-end latency
// stops at the last such event, so the trailing usage event does not lengthen it.

import { readSse } from './sse.js';

export interface CompletionTarget {
  readonly baseUrl: string;
  readonly model: string;
  readonly apiKey?: string;
}

export interface PromptRequest {
  readonly prompt: string;
  /** Prompt tokens as the dataset counted them (exact with a tokenizer, a guess with words). */
  readonly promptLen: number;
  /** max_tokens; with ignore_eos the server generates exactly this many. */
  readonly outputLen: number;
}

export interface RequestOutput {
  readonly success: boolean;
  readonly error?: string;
  /** Bench clock (ms) just before the POST. */
  readonly startMs: number;
  /** First token − start; 0 when none arrived. */
  readonly ttftMs: number;
  /** Gaps between consecutive token events after the first. */
  readonly itlMs: readonly number[];
  /** Last token event − start. */
  readonly latencyMs: number;
  /** usage.completion_tokens; null when the server sent no usage. */
  readonly outputTokens: number | null;
  /** usage.prompt_tokens, else the dataset's count. */
  readonly promptTokens: number;
  readonly generatedText: string;
}

interface CompletionChunk {
  readonly choices?: readonly { readonly text?: string | null }[];
  readonly usage?: { readonly prompt_tokens?: number; readonly completion_tokens?: number } | null;
  readonly error?: { readonly message?: string } | string;
}

export function completionBody(model: string, request: PromptRequest): Record<string, unknown> {
  return {
    model,
    prompt: request.prompt,
    max_tokens: request.outputLen,
    temperature: 0,
    stream: true,
    stream_options: { include_usage: true },
    // vLLM's extension: every request produces exactly max_tokens, so runs are comparable.
    ignore_eos: true,
  };
}

export async function sendCompletion(target: CompletionTarget, request: PromptRequest, now: () => number = () => performance.now()): Promise<RequestOutput> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (target.apiKey) headers['authorization'] = `Bearer ${target.apiKey}`;
  const startMs = now();
  const trace = new StreamTrace(startMs, request.promptLen);
  try {
    const response = await fetch(`${target.baseUrl}/v1/completions`, { method: 'POST', headers, body: JSON.stringify(completionBody(target.model, request)) });
    if (response.status !== 200 || !response.body) return trace.failed(`HTTP ${response.status}: ${(await response.text()).slice(0, 300)}`);
    for await (const event of readSse(response.body, now)) {
      if (event.data === '[DONE]') break;
      const problem = trace.event(event.data, event.atMs, event.event);
      if (problem) return trace.failed(problem);
    }
  } catch (error) {
    return trace.failed(error instanceof Error ? `${error.message}${causeOf(error)}` : String(error));
  }
  return trace.finished();
}

/** The per-request state while its stream arrives. */
export class StreamTrace {
  private ttftMs = 0;
  private lastMs: number | undefined;
  private readonly itlMs: number[] = [];
  private outputTokens: number | null = null;
  private promptTokens: number;
  private text = '';

  constructor(
    private readonly startMs: number,
    promptLen: number,
  ) {
    this.promptTokens = promptLen;
  }

  /** One SSE payload received at `atMs`; returns an error message if the stream reports one. */
  event(data: string, atMs: number, eventName?: string): string | undefined {
    let chunk: CompletionChunk;
    try {
      chunk = JSON.parse(data) as CompletionChunk;
    } catch {
      return `malformed event: ${data.slice(0, 200)}`;
    }
    if (eventName === 'error' || chunk.error !== undefined) {
      const message = typeof chunk.error === 'string' ? chunk.error : chunk.error?.message;
      return `stream error: ${message ?? data.slice(0, 200)}`;
    }
    if (chunk.choices && chunk.choices.length > 0) {
      if (this.lastMs === undefined) this.ttftMs = atMs - this.startMs;
      else this.itlMs.push(atMs - this.lastMs);
      this.lastMs = atMs;
      this.text += chunk.choices[0]?.text ?? '';
    }
    if (chunk.usage) {
      if (typeof chunk.usage.completion_tokens === 'number') this.outputTokens = chunk.usage.completion_tokens;
      if (typeof chunk.usage.prompt_tokens === 'number') this.promptTokens = chunk.usage.prompt_tokens;
    }
    return undefined;
  }

  finished(): RequestOutput {
    if (this.lastMs === undefined) return this.failed('the stream ended before any token');
    return this.output(true);
  }

  failed(error: string): RequestOutput {
    return { ...this.output(false), error };
  }

  private output(success: boolean): RequestOutput {
    return {
      success,
      startMs: this.startMs,
      ttftMs: this.ttftMs,
      itlMs: this.itlMs,
      latencyMs: this.lastMs === undefined ? 0 : this.lastMs - this.startMs,
      outputTokens: this.outputTokens,
      promptTokens: this.promptTokens,
      generatedText: this.text,
    };
  }
}

/** fetch wraps socket errors as "fetch failed"; the cause says what actually happened. */
function causeOf(error: Error): string {
  const cause = (error as { cause?: unknown }).cause;
  return cause instanceof Error ? ` (${cause.message})` : '';
}
