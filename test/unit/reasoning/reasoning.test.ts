// The reasoning formats: fixed examples per family and prompt shape, then the property the
// streaming split exists for: any chunking of the same text accumulates to the whole reading.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { deepseekR1, promptOpensBlock, qwen3, ReasoningStream, splitReasoning, ThinkingTokenCounter, type ReasoningPlan } from '../../../src/reasoning/index.js';

const QWEN3: ReasoningPlan = { format: qwen3, startsInside: false };
const QWEN3_OPEN: ReasoningPlan = { format: qwen3, startsInside: true };
const R1: ReasoningPlan = { format: deepseekR1, startsInside: true };

function streamed(plan: ReasoningPlan, chunks: readonly string[]) {
  const stream = new ReasoningStream(plan);
  let reasoning = '';
  let content = '';
  for (const piece of [...chunks.map((c) => stream.push(c)), stream.finish()]) {
    reasoning += piece.reasoning;
    content += piece.content;
  }
  return { reasoning, content };
}

/** Cuts `text` at the given points (sorted, deduplicated). */
function cut(text: string, points: readonly number[]): string[] {
  const at = [...new Set(points.map((p) => p % (text.length + 1)))].sort((a, b) => a - b);
  const chunks: string[] = [];
  let from = 0;
  for (const p of at) {
    chunks.push(text.slice(from, p));
    from = p;
  }
  chunks.push(text.slice(from));
  return chunks;
}

describe('qwen3', () => {
  it('splits a block the output opens, dropping the whitespace around the tags', () => {
    expect(splitReasoning(QWEN3, '<think>\nLet me add.\n</think>\n\nIt is 4.')).toEqual({ reasoning: 'Let me add.', content: 'It is 4.' });
    expect(splitReasoning(QWEN3, '\n<think>a</think>b')).toEqual({ reasoning: 'a', content: 'b' });
  });

  it('reads output with no block as all content (enable_thinking false), however it starts', () => {
    expect(splitReasoning(QWEN3, 'Hello there')).toEqual({ reasoning: '', content: 'Hello there' });
    expect(splitReasoning(QWEN3, '  <b>bold</b> and </think>')).toEqual({ reasoning: '', content: '  <b>bold</b> and </think>' });
    // A block later in the output is text: only the output's start opens one.
    expect(splitReasoning(QWEN3, 'x <think>y</think>')).toEqual({ reasoning: '', content: 'x <think>y</think>' });
  });

  it('starts inside when the prompt opened the block; a repeated <think> is skipped', () => {
    expect(splitReasoning(QWEN3_OPEN, 'step one\n</think>\n\nanswer')).toEqual({ reasoning: 'step one', content: 'answer' });
    expect(splitReasoning(QWEN3_OPEN, '<think>step</think>answer')).toEqual({ reasoning: 'step', content: 'answer' });
  });

  it('keeps an unclosed block as reasoning with no content (cut short by max_tokens)', () => {
    expect(splitReasoning(QWEN3, '<think>still thinking ')).toEqual({ reasoning: 'still thinking', content: '' });
    expect(splitReasoning(QWEN3_OPEN, 'still')).toEqual({ reasoning: 'still', content: '' });
  });

  it('knows a prompt that ends inside a block from one whose block is closed', () => {
    expect(promptOpensBlock(qwen3, '<|im_start|>assistant\n<think>\n')).toBe(true);
    expect(promptOpensBlock(qwen3, '<|im_start|>assistant\n<think>\n\n</think>\n\n')).toBe(false);
    expect(promptOpensBlock(qwen3, '<|im_start|>user\n<think><|im_end|>\n<|im_start|>assistant\n')).toBe(false);
    expect(promptOpensBlock(qwen3, null)).toBe(false);
    expect(promptOpensBlock(deepseekR1, 'anything')).toBe(true);
  });
});

describe('deepseek_r1', () => {
  it('reads text before </think> as reasoning, with or without the model repeating <think>', () => {
    expect(splitReasoning(R1, 'Think hard.</think>The answer')).toEqual({ reasoning: 'Think hard.', content: 'The answer' });
    expect(splitReasoning(R1, '<think>\nThink.\n</think>\n\nA')).toEqual({ reasoning: 'Think.', content: 'A' });
    expect(splitReasoning(R1, 'no end yet')).toEqual({ reasoning: 'no end yet', content: '' });
  });
});

describe('streaming', () => {
  it('holds a possible tag and never sends it as text', () => {
    const stream = new ReasoningStream(QWEN3);
    expect(stream.push('<thi')).toEqual({ reasoning: '', content: '' });
    expect(stream.push('nk>\nI')).toEqual({ reasoning: 'I', content: '' });
    expect(stream.push(' think </th')).toEqual({ reasoning: ' think', content: '' });
    expect(stream.inAnswer).toBe(false);
    expect(stream.push('ink>\n\nOK')).toEqual({ reasoning: '', content: 'OK' });
    expect(stream.inAnswer).toBe(true);
    expect(stream.finish()).toEqual({ reasoning: '', content: '' });
  });

  it('releases a held tag prefix as content once it is not a tag', () => {
    const stream = new ReasoningStream(QWEN3);
    expect(stream.push('<')).toEqual({ reasoning: '', content: '' });
    expect(stream.push('b>hi')).toEqual({ reasoning: '', content: '<b>hi' });
  });

  const pieces = fc.constantFrom('<think>', '</think>', '<th', 'ink>', '</', 'think', '\n', ' ', 'a', 'b c', '<', '>', '</thin', 'k>');
  const texts = fc.array(pieces, { maxLength: 14 }).map((p) => p.join(''));
  const plans = fc.constantFrom(QWEN3, QWEN3_OPEN, R1);

  it('accumulates to the whole reading for any chunking of the text', () => {
    fc.assert(
      fc.property(plans, texts, fc.array(fc.nat(), { maxLength: 8 }), (plan, text, points) => {
        expect(streamed(plan, cut(text, points))).toEqual(splitReasoning(plan, text));
      }),
      { numRuns: 2000 },
    );
  });

  it('also one character at a time', () => {
    fc.assert(
      fc.property(plans, texts, (plan, text) => {
        expect(streamed(plan, [...text])).toEqual(splitReasoning(plan, text));
      }),
      { numRuns: 500 },
    );
  });
});

describe('ThinkingTokenCounter', () => {
  const spec = (startsInside: boolean, budget: number | null = null) => ({ startTokenIds: [1], endTokenIds: [2], startsInside, budget });

  it('counts the tokens strictly inside a block the output opens', () => {
    const counter = new ThinkingTokenCounter(spec(false));
    counter.push([1, 7, 7]);
    counter.push([7, 2, 9, 9]);
    expect(counter.count).toBe(3);
  });

  it('counts nothing when the output does not open a block', () => {
    const counter = new ThinkingTokenCounter(spec(false));
    counter.push([5, 1, 7, 2]);
    expect(counter.count).toBe(0);
  });

  it('starts counting at once when the prompt opened the block, and knows a multi-token end', () => {
    const counter = new ThinkingTokenCounter({ startTokenIds: [1], endTokenIds: [3, 4], startsInside: true, budget: null });
    counter.push([7, 3, 7, 3]);
    counter.push([4, 8, 3, 4]);
    expect(counter.count).toBe(3);
  });
});
