// The output machine on given parts: items open and close in the order the model wrote them
// (reasoning, message, function calls), each with the documented events, and the items it keeps
// are the .done events' items.
import { describe, expect, it } from 'vitest';
import { ResponseOutput, type OutputEvent, type OutputPart } from '../../../../openai-compat/responses/output-events.js';

function machine() {
  let n = 0;
  return new ResponseOutput((prefix) => `${prefix}_${n++}`);
}

const types = (events: readonly OutputEvent[]) => events.map((e) => e.type);

describe('ResponseOutput', () => {
  it('takes reasoning, then content, then two calls through their items and events', () => {
    const output = machine();
    const parts: OutputPart[] = [
      { kind: 'reasoning', text: 'hm' },
      { kind: 'reasoning', text: 'm' },
      { kind: 'content', text: 'Sure.' },
      { kind: 'call', index: 0, id: 'call_a', name: 'f' },
      { kind: 'arguments', index: 0, text: '{"x":' },
      { kind: 'arguments', index: 0, text: '1}' },
      { kind: 'call', index: 1, id: 'call_b', name: 'g' },
      { kind: 'arguments', index: 1, text: '{}' },
    ];
    const events = [...output.push(parts), ...output.finish('completed')];
    expect(types(events)).toEqual([
      'response.output_item.added',
      'response.content_part.added',
      'response.reasoning_text.delta',
      'response.reasoning_text.delta',
      'response.reasoning_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
    ]);
    expect(output.items).toEqual([
      { id: 'rs_0', type: 'reasoning', status: 'completed', summary: [], content: [{ type: 'reasoning_text', text: 'hmm' }] },
      { id: 'msg_1', type: 'message', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: 'Sure.', annotations: [], logprobs: [] }] },
      { id: 'fc_2', type: 'function_call', status: 'completed', call_id: 'call_a', name: 'f', arguments: '{"x":1}' },
      { id: 'fc_3', type: 'function_call', status: 'completed', call_id: 'call_b', name: 'g', arguments: '{}' },
    ]);
    expect(output.callCount).toBe(2);
    // Every .done item is the kept one; indexes count items.
    const done = events.filter((e) => e.type === 'response.output_item.done');
    expect(done.map((e) => e.item)).toEqual(output.items);
    expect(done.map((e) => e.output_index)).toEqual([0, 1, 2, 3]);
    expect(events[0]).toEqual({ type: 'response.output_item.added', output_index: 0, item: { id: 'rs_0', type: 'reasoning', status: 'in_progress', summary: [], content: [] } });
    expect(events.find((e) => e.type === 'response.function_call_arguments.done' && e.item_id === 'fc_2')).toEqual({
      type: 'response.function_call_arguments.done',
      item_id: 'fc_2',
      output_index: 2,
      arguments: '{"x":1}',
    });
  });

  it('marks the last item incomplete on a length stop, and gives an empty output one empty message', () => {
    const cut = machine();
    cut.push([{ kind: 'content', text: 'Half' }]);
    cut.finish('incomplete');
    expect(cut.items).toMatchObject([{ type: 'message', status: 'incomplete' }]);
    const empty = machine();
    expect(types(empty.finish('completed'))).toEqual([
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
    ]);
    expect(empty.items).toMatchObject([{ type: 'message', content: [{ type: 'output_text', text: '' }] }]);
  });

  it('ignores empty text and refuses arguments for a call that is no longer open', () => {
    const output = machine();
    expect(output.push([{ kind: 'content', text: '' }])).toEqual([]);
    output.push([
      { kind: 'call', index: 0, id: 'c', name: 'f' },
      { kind: 'content', text: 'x' },
    ]);
    expect(() => output.push([{ kind: 'arguments', index: 0, text: '{}' }])).toThrow(/call 0/);
  });
});
