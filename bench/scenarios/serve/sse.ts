// Server-sent events as an OpenAI-style stream uses them: `data:` payloads separated by a blank
// line, `:` comment lines (keep-alive pings) ignored, `[DONE]` at the end. Network reads split
// events anywhere (mid-line, mid-character, between "\r" and "\n"), so the parser keeps the
// undecoded tail and only hands out whole events.

export interface SseEvent {
  /** The `event:` field; absent for plain data events. */
  readonly event?: string;
  /** `data:` lines of the event joined with "\n". */
  readonly data: string;
}

export class SseParser {
  private buffer = '';
  private data: string[] = [];
  private event: string | undefined;

  /** Feeds decoded text; returns the events it completed. */
  push(text: string): SseEvent[] {
    this.buffer += text;
    const events: SseEvent[] = [];
    let start = 0;
    for (;;) {
      const end = lineEnd(this.buffer, start);
      if (end === undefined) break;
      const line = this.buffer.slice(start, end.at);
      start = end.next;
      const done = this.line(line);
      if (done) events.push(done);
    }
    this.buffer = this.buffer.slice(start);
    return events;
  }

  /** At end of stream: an event that was never closed by a blank line still counts. */
  end(): SseEvent[] {
    const tail = this.buffer;
    this.buffer = '';
    const events: SseEvent[] = [];
    if (tail !== '') {
      const done = this.line(tail);
      if (done) events.push(done);
    }
    const last = this.line('');
    if (last) events.push(last);
    return events;
  }

  private line(line: string): SseEvent | undefined {
    if (line === '') {
      if (this.data.length === 0 && this.event === undefined) return undefined;
      const event: SseEvent = this.event === undefined ? { data: this.data.join('\n') } : { event: this.event, data: this.data.join('\n') };
      this.data = [];
      this.event = undefined;
      return event;
    }
    if (line.startsWith(':')) return undefined;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    // One optional space after the colon belongs to the syntax, not the value.
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') this.data.push(value);
    else if (field === 'event') this.event = value;
    return undefined;
  }
}

/**
 * The end of the next complete line from `from`: "\n", "\r\n" or a lone "\r". A "\r" that ends
 * the buffer is not yet a line end, since its "\n" may be in the next read.
 */
function lineEnd(text: string, from: number): { at: number; next: number } | undefined {
  for (let i = from; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 10) return { at: i, next: i + 1 };
    if (c === 13) {
      if (i + 1 >= text.length) return undefined;
      return { at: i, next: text.charCodeAt(i + 1) === 10 ? i + 2 : i + 1 };
    }
  }
  return undefined;
}

/**
 * Events of a response body with the time each network read arrived: events in the same read
 * share its timestamp, as a client reading the socket would see them.
 */
export async function* readSse(body: ReadableStream<Uint8Array>, now: () => number): AsyncGenerator<SseEvent & { readonly atMs: number }> {
  const parser = new SseParser();
  const decoder = new TextDecoder();
  const reader = body.getReader();
  let finished = false;
  try {
    while (!finished) {
      const { done, value } = await reader.read();
      const atMs = now();
      finished = done;
      const events = done ? parser.push(decoder.decode()).concat(parser.end()) : parser.push(decoder.decode(value, { stream: true }));
      for (const event of events) yield { ...event, atMs };
    }
  } finally {
    // A consumer that stops early (at [DONE], or on an error) must not leave the connection half read.
    if (!finished) await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
}
