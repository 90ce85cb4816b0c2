// Server-sent events from a fetch body, chunk by chunk: the data of each complete event. fetch
// (not EventSource) because the chat route is a POST with an Authorization header.

export class SseParser {
  private buffer = '';

  /** The data payloads of the events this chunk completes (multi-line data joined by \n). */
  feed(chunk: string): string[] {
    this.buffer += chunk;
    const events = this.buffer.split(/\r?\n\r?\n/);
    this.buffer = events.pop() ?? '';
    return events.flatMap((event) => {
      const data = event
        .split(/\r?\n/)
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(line.startsWith('data: ') ? 6 : 5));
      return data.length === 0 ? [] : [data.join('\n')];
    });
  }
}
