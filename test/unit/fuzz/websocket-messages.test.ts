// Fuzzing the /v1/ws client message parser: frames are JSON text of near-valid generate and
// cancel messages (fields swapped for weird values, unknown and prototype keys, mangled text),
// and what parses is carried on through the real input processor of the tiny Qwen3 model, as
// the socket's session does. Every frame must become a message or an error frame's ConveyorError,
// and peekId must never throw (it names the generation an error frame belongs to).

import { join } from 'node:path';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { InputProcessor } from '../../../src/engine-client/input-processor.js';
import { errorMessage, MAX_ID_LENGTH, parseClientMessage, peekId } from '../../../src/server/websocket/messages.js';
import { jsonText, maybe, mutatedText, objectOf, outcome, ownRecord, PROTOTYPE_KEYS, runs, weirdValue } from './support.js';

let qwen3: InputProcessor;
beforeAll(async () => {
  qwen3 = await InputProcessor.load(join(process.cwd(), 'models/repository/qwen3-tiny/1'));
});

const id = maybe(fc.oneof(fc.string({ minLength: 1, maxLength: 8 }), fc.constant('x'.repeat(MAX_ID_LENGTH + 1))), 8);
const fields = objectOf(
  {
    type: maybe(fc.constantFrom('generate', 'cancel', 'Generate'), 10),
    id,
    model: maybe(fc.constant('qwen3'), 8),
    version: maybe(fc.constantFrom('1', ''), 3),
    chat_template_kwargs: maybe(objectOf({ enable_thinking: maybe(fc.boolean()) }), 3),
    add_special_tokens: maybe(fc.boolean()),
    priority: maybe(fc.integer({ min: -3, max: 3 })),
    max_tokens: maybe(fc.integer({ min: 0, max: 32 })),
    temperature: maybe(fc.double({ min: 0, max: 2, noNaN: true })),
    stop: maybe(fc.array(fc.string({ maxLength: 2 }), { maxLength: 3 })),
    logprobs: maybe(fc.boolean()),
    top_logprobs: maybe(fc.nat({ max: 25 })),
    seed: maybe(fc.integer()),
  },
  fc.oneof(fc.constantFrom(...PROTOTYPE_KEYS), fc.string({ maxLength: 6 })),
  { required: ['type', 'id', 'model'], presence: 0.3 },
);

const messages = maybe(
  fc.array(objectOf({ role: maybe(fc.constantFrom('user', 'system', 'assistant'), 8), content: maybe(fc.string({ maxLength: 8 }), 8) }, undefined, { required: ['role', 'content'] }), {
    minLength: 1,
    maxLength: 2,
  }),
  8,
);
const prompt = maybe(fc.oneof(fc.string({ minLength: 1, maxLength: 10 }), fc.array(fc.nat({ max: 160_000 }), { maxLength: 4 })), 8);

/** Usually exactly one of messages and prompt, as the protocol asks; now and then both or neither. */
const generate = fc
  .tuple(
    fields,
    fc.oneof(
      {
        weight: 8,
        arbitrary: fc.oneof(
          messages.map((m) => [['messages', m]] as const),
          prompt.map((p) => [['prompt', p]] as const),
        ),
      },
      {
        weight: 1,
        arbitrary: fc.tuple(messages, prompt).map(
          ([m, p]) =>
            [
              ['messages', m],
              ['prompt', p],
            ] as const,
        ),
      },
      { weight: 1, arbitrary: fc.constant([] as const) },
    ),
  )
  .map(([base, extra]) => ownRecord([...Object.entries(base), ...extra]));

const frame = fc.oneof(
  { weight: 6, arbitrary: generate.map(jsonText) },
  { weight: 2, arbitrary: mutatedText(generate.map(jsonText)) },
  { weight: 1, arbitrary: weirdValue.map(jsonText) },
  { weight: 1, arbitrary: fc.string({ maxLength: 30 }) },
);

describe('WebSocket message fuzzing', () => {
  it('any frame parses to a message the engine can take, or to an error frame', () => {
    let prepared = 0;
    fc.assert(
      fc.property(frame, (text) => {
        const peeked = peekId(text);
        if (peeked !== undefined) expect(peeked.length).toBeGreaterThan(0);
        const parsed = outcome(() => parseClientMessage(text));
        if (!parsed.ok) {
          const reply = errorMessage(parsed.error, peeked);
          expect(reply).toMatchObject({ type: 'error', error: { message: expect.any(String), type: expect.any(String), code: expect.any(String) } });
          return;
        }
        const message = parsed.value;
        expect(message.id.length).toBeGreaterThan(0);
        expect(message.id.length).toBeLessThanOrEqual(MAX_ID_LENGTH);
        if (message.type !== 'generate') return;
        const processed = outcome(() => qwen3.process({ ...message.input, id: message.id }));
        if (!processed.ok) return;
        prepared++;
        const { request } = processed.value;
        expect(request.promptTokenIds.length).toBeGreaterThan(0);
        for (const token of request.promptTokenIds) expect(Number.isInteger(token) && token >= 0 && token < qwen3.info.vocabSize).toBe(true);
        expect(request.stop.maxTokens).toBeGreaterThanOrEqual(1);
      }),
      { numRuns: runs(800) },
    );
    expect(prepared).toBeGreaterThan(0);
  });

  it('a frame nested 100,000 deep is an error frame, not a crash', () => {
    const deep = `{"type":"generate","id":"a","model":"qwen3","prompt":"hi","stop":${'['.repeat(100_000)}${']'.repeat(100_000)}}`;
    const parsed = outcome(() => parseClientMessage(deep));
    if (!parsed.ok || parsed.value.type !== 'generate') throw new Error('the frame should parse as a generate message');
    const { input } = parsed.value;
    expect(outcome(() => qwen3.process({ ...input, id: 'a' })).ok).toBe(false);
  });
});
