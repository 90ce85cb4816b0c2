// A tool_calls constraint (ToolCallsGrammar, src/contracts/generate.ts) as one EBNF grammar:
// each tool's call as JSON in the server's layout — a function's arguments through its
// parameters' schema (schema-grammar.ts), a custom tool's `{"input": "…"}` with the string's
// content held to the tool's regex or grammar (json-string-ebnf.ts) — inside the framing its
// tool_choice reads: `[call, …]` for required, or free text then call blocks for auto. Every
// tool's rules are prefixed with its index, so no two tools' rules collide. Pure.

import type { CustomInputGrammar, ToolCallGrammar, ToolCallsFraming, ToolCallsGrammar } from '../contracts/generate.js';
import { ebnfLiteral } from './grammar-spec.js';
import { JSON_ESCAPE, JSON_PLAIN_CHAR, optionEbnf } from './regex-ebnf.js';
import { PatternUnsupported, parsePattern } from './regex-grammar.js';
import { jsonStringEbnf, prefixedEbnf } from './json-string-ebnf.js';
import { schemaGrammar } from './schema-grammar.js';

/** The constraint's grammar text. Throws SchemaUnsupported (a function's schema) or PatternUnsupported (a custom input, a framing). */
export function toolCallsGrammarText(calls: ToolCallsGrammar): string {
  if (calls.tools.length === 0) throw new PatternUnsupported('tool calls without tools');
  const rules: string[] = [];
  const names = calls.tools.map((tool, i) => {
    const prefix = `tool${i}_`;
    rules.push(...toolRules(tool, calls.argumentsKey, prefix));
    return `${prefix}call`;
  });
  rules.unshift(`call ::= ${names.join(' | ')}`);
  return [`root ::= ${framingExpression(calls.framing, rules)}`, ...rules].join('\n');
}

/** The rules of one tool's call, `<prefix>call` the call itself. */
function toolRules(tool: ToolCallGrammar, argumentsKey: string, prefix: string): string[] {
  if (tool.kind === 'function') {
    const schema = {
      type: 'object',
      properties: { name: { const: tool.name }, [argumentsKey]: JSON.parse(tool.parameters) as unknown },
      required: ['name', argumentsKey],
      additionalProperties: false,
    };
    // Properties a schema does not name are not generated (OpenAI's strict rule, as for response_format).
    return [`${prefix}call ::= ${prefix}root`, prefixedEbnf(schemaGrammar(schema, { absentAdditionalProperties: 'forbid' }), prefix)];
  }
  const head = ebnfLiteral(`{"name": ${JSON.stringify(tool.name)}, ${JSON.stringify(argumentsKey)}: {"input": "`);
  const [input, ...inputRules] = customInput(tool.input, `${prefix}input_`);
  return [`${prefix}call ::= ${head} ${input} ${ebnfLiteral('"}}')}`, ...inputRules];
}

/** A custom input as JSON string content: the expression, then any rules it needs. */
function customInput(input: CustomInputGrammar, prefix: string): string[] {
  switch (input.kind) {
    case 'text':
      return [`(${JSON_PLAIN_CHAR} | "\\\\" ${JSON_ESCAPE})*`];
    case 'regex': {
      // The whole input matches (anchors implied), as a forced custom tool's regex spec.
      const options = parsePattern(input.pattern, { wholeString: true })
        .map(({ node }, i) => optionEbnf(node, true, `${prefix}lookahead${i}_`))
        .filter((option) => option !== null);
      if (options.length === 0) throw new PatternUnsupported('a pattern no string matches');
      return [`(${options.map((o) => o.expression).join(' | ')})`, ...options.flatMap((o) => o.rules)];
    }
    case 'ebnf':
      return [`${prefix}root`, jsonStringEbnf(input.grammar, prefix)];
  }
}

/** The root's expression for the framing; adds the rules it needs. */
function framingExpression(framing: ToolCallsFraming, rules: string[]): string {
  const more = (joined: string): string => (framing.maxCalls === 1 ? '' : ` (${joined})${framing.maxCalls === null ? '*' : `{0,${framing.maxCalls - 1}}`}`);
  if (framing.kind === 'array') return `"[" call${more('", " call')} "]"`;
  const { open, close, padding, separator } = framing;
  const pad = padding === '' ? '' : ` ${ebnfLiteral(padding)}`;
  rules.push(`block ::= ${ebnfLiteral(open)}${pad} call${pad} ${ebnfLiteral(close)}`, ...textAvoiding(open, 'text'));
  return `text (block${more(`${ebnfLiteral(separator)} block`)})?`;
}

/**
 * Rules for `name`: any text in which `marker` never appears, so a call can only be opened as the
 * framing writes it. The text is cut at each occurrence of the marker's first character; each
 * piece after a cut may begin with a proper prefix of the marker's rest, never with all of it.
 * That needs the first character to appear nowhere else in the marker (true of every call
 * marker served: `<tool_call>`); other markers are refused.
 */
function textAvoiding(marker: string, name: string): string[] {
  const chars = [...marker];
  const [first, ...rest] = chars;
  if (first === undefined || rest.includes(first) || chars.some((c) => c.codePointAt(0)! > 0x7f)) {
    throw new PatternUnsupported(`a call marker ${JSON.stringify(marker)} whose first character recurs in it or that is not ASCII`);
  }
  const notIn = (...cs: string[]): string => `[^${cs.map(classEscape).join('')}]`;
  if (rest.length === 0) return [`${name} ::= ${notIn(first)}*`];
  // The runs of text between cuts, one rule. The other wide positions (one per character of the
  // marker) are most of the grammar's compile: ~1 s for `<tool_call>` on Qwen3's vocabulary on a
  // loaded 2-core machine, once per distinct set of tools (compiles are cached).
  const free = `${name}_free`;
  // The innermost piece: the marker's rest up to its last character, then anything but that character.
  let piece = `""`;
  for (let i = rest.length - 1; i >= 0; i--) {
    const c = rest[i]!;
    const after = i === rest.length - 1 ? '' : ` | ${ebnfLiteral(c)} (${piece})`;
    piece = `"" | ${notIn(first, c)} ${free}${after}`;
  }
  return [`${name} ::= ${free} (${ebnfLiteral(first)} (${piece}))*`, `${free} ::= ${notIn(first)}*`];
}

const classEscape = (c: string): string => `\\u${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
