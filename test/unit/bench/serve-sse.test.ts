import { describe, expect, it } from 'vitest';
import { readSse, SseParser } from '../../../bench/scenarios/serve/sse.js';

describe('SseParser', () => {
  it('hands out whole events only, however the text is split', () => {
    const stream = 'data: {"a":1}\n\ndata: {"b":2}\n\n: ping\n\ndata: [DONE]\n\n';
    for (let cut = 0; cut <= stream.length; cut++) {
      const parser = new SseParser();
      const events = [...parser.push(stream.slice(0, cut)), ...parser.push(stream.slice(cut)), ...parser.end()];
      expect(
        events.map((e) => e.data),
        `cut at ${cut}`,
      ).toEqual(['{"a":1}', '{"b":2}', '[DONE]']);
    }
  });

  it('accepts CRLF and lone CR line ends, even with the CR and LF in different reads', () => {
    const parser = new SseParser();
    expect(parser.push('data: x\r')).toEqual([]);
    expect(parser.push('\n\r')).toEqual([]);
    // A CR at the very end may still be followed by its LF, so the blank line after y is pending.
    expect(parser.push('\ndata: y\r\r')).toEqual([{ data: 'x' }]);
    expect(parser.push('data: z\n\n')).toEqual([{ data: 'y' }, { data: 'z' }]);
  });

  it('joins multi-line data, keeps the event name, and strips exactly one space after the colon', () => {
    const parser = new SseParser();
    expect(parser.push('event: error\ndata:  {"x":\ndata:1}\nid: 7\n\n')).toEqual([{ event: 'error', data: ' {"x":\n1}' }]);
  });

  it('ignores comment-only blocks and ends an unterminated last event at end of stream', () => {
    const parser = new SseParser();
    expect(parser.push(': keep-alive\n\n')).toEqual([]);
    expect(parser.push('data: tail')).toEqual([]);
    expect(parser.end()).toEqual([{ data: 'tail' }]);
  });
});

describe('readSse', () => {
  it('stamps every event with the time its read arrived and decodes characters split across reads', async () => {
    const bytes = new TextEncoder().encode('data: "é"\n\ndata: 2\n\n');
    const split = bytes.indexOf(0xa9); // inside é's two bytes
    const chunks = [bytes.slice(0, split), bytes.slice(split)];
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        const next = chunks.shift();
        if (next) controller.enqueue(next);
        else controller.close();
      },
    });
    let clock = 0;
    const events = [];
    for await (const event of readSse(body, () => (clock += 10))) events.push(event);
    expect(events).toEqual([
      { data: '"é"', atMs: 20 },
      { data: '2', atMs: 20 },
    ]);
  });

  it('cancels the body when the consumer stops early', async () => {
    let cancelled = false;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        controller.enqueue(new TextEncoder().encode('data: [DONE]\n\n'));
      },
      cancel() {
        cancelled = true;
      },
    });
    for await (const event of readSse(body, () => 0)) if (event.data === '[DONE]') break;
    expect(cancelled).toBe(true);
  });
});
