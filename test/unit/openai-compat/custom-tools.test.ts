// Custom tools' constraints as a tool plan sees them (openai-compat/custom-tools.ts): required
// always gets the tool_calls array; auto gets the model's call blocks only where a custom tool
// has a grammar, and a model whose call format has no blocks is refused by the definition's
// field rather than served unconstrained; other choices keep the plan.
import { describe, expect, it } from 'vitest';
import type { FunctionTool } from '../../../src/contracts/tools.js';
import type { ChatToolPlan } from '../../../src/server/kit/tool-plan.js';
import { hermes, llama3Json } from '../../../src/tool-calls/index.js';
import { type CustomTool, customAsFunction, customCallInput, withCustomConstraints } from '../../../openai-compat/custom-tools.js';

const TICKET: CustomTool = {
  name: 'ticket',
  description: 'Files a ticket.',
  format: { type: 'grammar', syntax: 'regex', definition: '[A-Z]{2}-[0-9]+' },
  definitionParam: 'tools[0].format.definition',
};
const NOTE: CustomTool = { name: 'note', description: null, format: { type: 'text' }, definitionParam: 'tools[1].format.definition' };
const tools = [TICKET, NOTE].map((tool) => customAsFunction(tool) as unknown as FunctionTool);
const plan = (format: ChatToolPlan['format']): ChatToolPlan => ({ tools, format, maxCalls: undefined });
const custom = (...list: CustomTool[]) => new Map(list.map((tool) => [tool.name, tool]));

describe('custom tool constraints', () => {
  it('required: the call array, custom inputs with their formats', () => {
    const constrained = withCustomConstraints(plan(hermes), custom(TICKET, NOTE), 'required', 'm');
    expect(constrained.grammar).toEqual({
      kind: 'tool_calls',
      calls: {
        framing: { kind: 'array', maxCalls: null },
        argumentsKey: 'parameters',
        tools: [
          { kind: 'custom', name: 'ticket', input: { kind: 'regex', pattern: '[A-Z]{2}-[0-9]+' } },
          { kind: 'custom', name: 'note', input: { kind: 'text' } },
        ],
      },
    });
  });

  it("auto: the model's call blocks where a custom tool has a grammar; none needed for text alone", () => {
    expect(withCustomConstraints(plan(hermes), custom(TICKET, NOTE), undefined, 'm').grammar).toMatchObject({
      kind: 'tool_calls',
      calls: { framing: { kind: 'blocks', open: '<tool_call>', close: '</tool_call>', padding: '\n', separator: '\n', maxCalls: null }, argumentsKey: 'arguments' },
    });
    expect(withCustomConstraints(plan(hermes), custom(NOTE), 'auto', 'm').grammar).toBeUndefined();
    expect(withCustomConstraints(plan(hermes), custom(TICKET), 'none', 'm').grammar).toBeUndefined();
  });

  it('auto with a call format no grammar frames: refused by the definition, not served loosely', () => {
    expect(() => withCustomConstraints(plan(llama3Json), custom(TICKET, NOTE), 'auto', 'm')).toThrow(
      expect.objectContaining({ param: 'tools[0].format.definition', openaiCode: 'unsupported_parameter', message: expect.stringContaining('llama3_json') }),
    );
  });

  it('reads a call input out of its arguments, or the arguments as written', () => {
    expect(customCallInput('{"input": "AB-1"}')).toBe('AB-1');
    expect(customCallInput('{"input": "AB-')).toBe('{"input": "AB-');
  });
});
