// Responses input items read into chat messages: parallel calls join one assistant turn,
// reasoning becomes the next assistant turn's reasoning_content, and rejections name the item.
import { describe, expect, it } from 'vitest';
import { inputItems, itemsToMessages, type Item } from '../../../../openai-compat/responses/input-items.js';

const noReferences = (id: string): Item => {
  throw new Error(`unexpected reference ${id}`);
};

describe('inputItems / itemsToMessages', () => {
  it('reads a string as one user message, after the instructions', () => {
    expect(itemsToMessages(inputItems('Hi', noReferences), 'Be brief.')).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Hi' },
    ]);
  });

  it('joins an assistant message, its reasoning and the calls after it into one turn; outputs become tool messages', () => {
    const items = inputItems(
      [
        { role: 'developer', content: [{ type: 'input_text', text: 'Rules' }] },
        {
          type: 'message',
          role: 'user',
          content: [
            { type: 'input_text', text: 'A' },
            { type: 'input_text', text: 'B' },
          ],
        },
        { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'short' }], content: [{ type: 'reasoning_text', text: 'long' }] },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Let me look.', annotations: [] }] },
        { type: 'function_call', call_id: 'c1', name: 'f', arguments: '{}' },
        { type: 'function_call', call_id: 'c2', name: 'g', arguments: '{"a":1}' },
        { type: 'function_call_output', call_id: 'c1', output: 'one' },
        { type: 'function_call_output', call_id: 'c2', output: [{ type: 'input_text', text: 'two' }] },
        { type: 'function_call', call_id: 'c3', name: 'f', arguments: '{}' },
      ],
      noReferences,
    );
    expect(itemsToMessages(items, null)).toEqual([
      { role: 'developer', content: 'Rules' },
      { role: 'user', content: 'AB' },
      {
        role: 'assistant',
        content: 'Let me look.',
        reasoning_content: 'long',
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } },
          { id: 'c2', type: 'function', function: { name: 'g', arguments: '{"a":1}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'c1', content: 'one' },
      { role: 'tool', tool_call_id: 'c2', content: 'two' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c3', type: 'function', function: { name: 'f', arguments: '{}' } }] },
    ]);
  });

  it('resolves item_reference through the caller and names bad items by their index', () => {
    const items = inputItems([{ type: 'item_reference', id: 'msg_1' }], (id) => ({ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: id }] }));
    expect(itemsToMessages(items, null)).toEqual([{ role: 'assistant', content: 'msg_1' }]);
    const refused = (input: unknown, ownFrom = 0) => {
      try {
        itemsToMessages(inputItems(input, noReferences), null, ownFrom);
      } catch (error) {
        return (error as { param?: string }).param;
      }
      return 'accepted';
    };
    expect(refused([])).toBe('input');
    expect(refused([1])).toBe('input[0]');
    expect(refused([{ role: 'user', content: 'x' }, { type: 'file_search_call' }])).toBe('input[1].type');
    expect(refused([{ role: 'user', content: [{ type: 'input_audio' }] }])).toBe('input[0].content[0].type');
    expect(refused([{ type: 'function_call', call_id: 'c', name: 'f', arguments: {} }])).toBe('input[0].arguments');
    expect(refused([{ type: 'function_call_output', output: 'x' }])).toBe('input[0].call_id');
    // Items before ownFrom came from the stored conversation.
    expect(
      refused(
        [
          { role: 'user', content: 'x' },
          { role: 'tool', content: 'y' },
        ],
        1,
      ),
    ).toBe('input[0].role');
  });
});
