// One streamed chat completion over the OpenAI route. Aborting the signal closes the
// connection, and the server aborts the generation.

import { call } from './api.js';
import { applyChunk, emptyProgress, type ChatChunk, type StreamProgress } from './chat-chunks.js';
import { SseParser } from './sse.js';

export type { ChatMessage, SamplingControls, StreamProgress } from './chat-chunks.js';
export { chatRequest } from './chat-chunks.js';

export async function streamChat(body: Record<string, unknown>, signal: AbortSignal, onProgress: (progress: StreamProgress) => void): Promise<StreamProgress> {
  const started = performance.now();
  const progress = emptyProgress();
  const response = await call('/v1/chat/completions', { method: 'POST', body: JSON.stringify(body), signal });
  const reader = response.body?.getReader();
  if (reader === undefined) throw new Error('the response has no body');
  const decoder = new TextDecoder();
  const parser = new SseParser();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    for (const data of parser.feed(decoder.decode(value, { stream: true }))) {
      if (data === '[DONE]') continue;
      const chunk = JSON.parse(data) as ChatChunk & { error?: { message?: string } };
      if (chunk.error) throw new Error(chunk.error.message ?? 'the stream failed');
      applyChunk(progress, chunk, performance.now() - started);
    }
    onProgress(progress);
  }
  return progress;
}
