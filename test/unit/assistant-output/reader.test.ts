// The shared assistant-output reader: reasoning first, tool calls read from the answer only, and
// the streamed deltas accumulating to the whole reading for any chunking.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AssistantOutputStream, readAssistantOutput, type AssistantDelta, type AssistantOutputPlan } from '../../../src/assistant-output/index.js';
import { deepseekR1, qwen3 } from '../../../src/reasoning/index.js';
import { hermes } from '../../../src/tool-calls/index.js';

const ids = () => {
  let n = 0;
  return () => `call_${n++}`;
};

const plan = (overrides: Partial<AssistantOutputPlan>): AssistantOutputPlan => ({ reasoning: { format: qwen3, startsInside: false }, toolCalls: hermes, newId: ids(), ...overrides });

function accumulate(deltas: readonly AssistantDelta[]) {
  let reasoning = '';
  let content = '';
  const calls: { id: string; name: string; arguments: string }[] = [];
  for (const d of deltas) {
    if (d.kind === 'reasoning') reasoning += d.text;
    else if (d.kind === 'content') content += d.text;
    else if (d.kind === 'call') calls[d.index] = { id: d.id, name: d.name, arguments: '' };
    else calls[d.index]!.arguments += d.text;
  }
  return { reasoning: reasoning === '' ? null : reasoning, content: content === '' ? null : content, calls };
}

function whole(p: AssistantOutputPlan, text: string) {
  const out = readAssistantOutput(p, text);
  return { reasoning: out.reasoning, content: out.content, calls: out.toolCalls.map((c) => ({ id: c.id, ...c.function })) };
}

function streamed(p: AssistantOutputPlan, chunks: readonly string[]) {
  const stream = new AssistantOutputStream(p);
  return accumulate([...chunks.flatMap((c) => stream.push(c)), ...stream.finish()]);
}

describe('readAssistantOutput', () => {
  it('reads reasoning, then the tool calls of the answer', () => {
    const text = '<think>\nThe user wants weather.\n</think>\n\nChecking.<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>';
    expect(whole(plan({}), text)).toEqual({ reasoning: 'The user wants weather.', content: 'Checking.', calls: [{ id: 'call_0', name: 'get_weather', arguments: '{"city": "Paris"}' }] });
  });

  it('leaves a call written while thinking as reasoning text', () => {
    const text = '<think>maybe <tool_call>{"name": "f", "arguments": {}}</tool_call></think>no call';
    expect(whole(plan({}), text)).toEqual({ reasoning: 'maybe <tool_call>{"name": "f", "arguments": {}}</tool_call>', content: 'no call', calls: [] });
  });

  it('without a reasoning parser the whole text is the answer; without a tool parser it is all content', () => {
    expect(whole(plan({ reasoning: null, toolCalls: null }), '<think>x</think>y')).toEqual({ reasoning: null, content: '<think>x</think>y', calls: [] });
    expect(whole(plan({ toolCalls: null }), '<think>x</think>')).toEqual({ reasoning: 'x', content: null, calls: [] });
    expect(whole(plan({ reasoning: { format: deepseekR1, startsInside: true }, toolCalls: null }), 'r</think>a')).toEqual({ reasoning: 'r', content: 'a', calls: [] });
  });

  it('keeps at most maxCalls calls', () => {
    const call = '<tool_call>{"name": "f", "arguments": {}}</tool_call>';
    expect(whole(plan({ maxCalls: 1 }), `<think>t</think>${call}${call}`).calls).toHaveLength(1);
  });
});

describe('AssistantOutputStream', () => {
  it('sends reasoning, then content, then a call opening and its arguments, in order', () => {
    const stream = new AssistantOutputStream(plan({}));
    const deltas = [...stream.push('<think>hm'), ...stream.push('m</think>ok '), ...stream.push('<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>'), ...stream.finish()];
    expect(deltas.map((d) => d.kind)).toEqual(['reasoning', 'reasoning', 'content', 'call', 'arguments']);
    expect(stream.toolCallCount).toBe(1);
  });

  const pieces = fc.constantFrom('<think>', '</think>', '<tool_call>', '</tool_call>', '{"name": "f", "arguments": {"x": 1}}', '<th', '</too', ' ', '\n', 'a', 'b', '<');
  const texts = fc.array(pieces, { maxLength: 12 }).map((p) => p.join(''));
  const reasoningPlans = fc.constantFrom({ format: qwen3, startsInside: false }, { format: qwen3, startsInside: true }, { format: deepseekR1, startsInside: true }, null);

  it('accumulates to the whole reading for any chunking of the text', () => {
    fc.assert(
      fc.property(reasoningPlans, fc.boolean(), texts, fc.array(fc.nat(), { maxLength: 8 }), (reasoning, withTools, text, points) => {
        const at = [...new Set(points.map((p) => p % (text.length + 1)))].sort((a, b) => a - b);
        const chunks = [0, ...at].map((p, i, all) => text.slice(p, all[i + 1] ?? text.length));
        const p = { reasoning, toolCalls: withTools ? hermes : null };
        expect(streamed({ ...p, newId: ids() }, chunks)).toEqual(whole({ ...p, newId: ids() }, text));
      }),
      { numRuns: 1500 },
    );
  });
});
