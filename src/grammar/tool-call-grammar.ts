// A tool_calls constraint (ToolCallsGrammar, src/contracts/generate.ts) as one EBNF grammar:
// each tool's call as JSON in the server's layout — a function's arguments through its
// parameters' schema (json-schema/), a custom tool's `{"input": "…"}` with the string's content
// held to the tool's regex or grammar (json-string-ebnf.ts) — inside the framing its tool_choice
// reads: `[call, …]` for required, or free text then call blocks for auto.
//
// The calls are translated as one JSON Schema document (callsDocument): the array of calls, or
// under auto the call itself, with each function's parameters under its call and their local
// $refs moved there. One translation means one string-guard plan for every call, so lengths,
// patterns' reach and uniqueItems are held beside the grammar as for response_format (under
// auto the guard follows JSON only after each opener). Translator rules are prefixed `schema_`,
// each custom tool's with its index, so no two collide. Pure.

import type { CustomInputGrammar, ToolCallGrammar, ToolCallsFraming, ToolCallsGrammar } from '../contracts/generate.js';
import { ebnfLiteral } from './grammar-spec.js';
import { guardOpener } from './guard-opener.js';
import type { GuardPlan } from './json-schema/guard-places.js';
import { rebaseRefs } from './json-schema/rebase-refs.js';
import { isObject, type Json, pointer, SchemaUnsupported } from './json-schema/schema-model.js';
import { SchemaTranslator } from './json-schema/schema-translator.js';
import { JSON_ESCAPE, JSON_PLAIN_CHAR, optionEbnf } from './regex-ebnf.js';
import { PatternUnsupported, parsePattern } from './regex-grammar.js';
import { jsonStringEbnf, prefixedEbnf } from './json-string-ebnf.js';

/** The constraint's grammar text. Throws SchemaUnsupported (a function's schema) or PatternUnsupported (a custom input, a framing). */
export function toolCallsGrammarText(calls: ToolCallsGrammar): string {
  return toolCallsGrammarPlan(calls).text;
}

/** The grammar text, and what it leaves to the string guard (null: nothing). Throws as toolCallsGrammarText. */
export function toolCallsGrammarPlan(calls: ToolCallsGrammar): { readonly text: string; readonly guard: GuardPlan | null } {
  if (calls.tools.length === 0) throw new PatternUnsupported('tool calls without tools');
  const document = callsDocument(calls);
  const translator = new SchemaTranslator(document.root, { absentAdditionalProperties: 'forbid', guardStrings: true });
  const rules: string[] = [];
  const names = calls.tools.map((tool, i) => {
    const prefix = `tool${i}_`;
    if (tool.kind === 'custom') {
      rules.push(...customRules(tool, calls.argumentsKey, prefix));
      return `${prefix}call`;
    }
    const call = translator.schema(document.calls[i]!, document.paths[i]!);
    if (call === null) throw new SchemaUnsupported('parameters', document.paths[i]!, 'allow no value');
    return `schema_${translator.rules.define(`${prefix}call`, call)}`;
  });
  rules.unshift(`call ::= ${names.join(' | ')}`);
  if (calls.tools.some((tool) => tool.kind === 'function')) rules.push(prefixedEbnf(translator.rules.definitions(), 'schema_'));
  const text = [`root ::= ${framingExpression(calls.framing, rules)}`, ...rules].join('\n');
  const plan = translator.guardPlan;
  if (plan === null || calls.framing.kind === 'array') return { text, guard: plan };
  return { text, guard: { ...plan, opener: guardOpener(calls.framing.open + calls.framing.padding) } };
}

/**
 * The calls as one schema: the output under `array` (tool_choice required), or one call under
 * `blocks` (auto: the guard starts there after each opener). A custom tool's call stands for its
 * shape only (its input is written by its own rules); a function's is what the grammar writes.
 */
function callsDocument(calls: ToolCallsGrammar): { readonly root: Json; readonly calls: readonly Json[]; readonly paths: readonly string[] } {
  const { framing, argumentsKey } = calls;
  const base = framing.kind === 'array' ? '#/items/anyOf' : '#/anyOf';
  const paths = calls.tools.map((_, i) => pointer(base, i));
  // A custom tool has no parameters (undefined); a function's are parsed once.
  const parsed = calls.tools.map((tool) => (tool.kind === 'function' ? (JSON.parse(tool.parameters) as Json) : undefined));
  const members = calls.tools.map((tool, i): Json => {
    const input = { type: 'object', properties: { input: { type: 'string' } }, required: ['input'], additionalProperties: false };
    const own = parsed[i];
    const parameters = own === undefined ? input : rebaseRefs(own, pointer(paths[i]!, 'properties', argumentsKey));
    return { type: 'object', properties: { name: { const: tool.name }, [argumentsKey]: parameters }, required: ['name', argumentsKey], additionalProperties: false };
  });
  const dialect = sharedDialect(parsed);
  const union: { [key: string]: Json } = { anyOf: members, ...(dialect === null ? {} : { $schema: dialect }) };
  if (framing.kind === 'blocks') return { root: union, calls: members, paths };
  const bounds = { minItems: 1, ...(framing.maxCalls === null ? {} : { maxItems: framing.maxCalls }) };
  return { root: { type: 'array', items: { anyOf: members }, ...bounds, ...(dialect === null ? {} : { $schema: dialect }) }, calls: members, paths };
}

/** The `$schema` every function's parameters that name one agree on (draft 4 to 7 read `items` and `$ref` otherwise); null when none or they differ. */
function sharedDialect(parameters: readonly (Json | undefined)[]): string | null {
  const named = new Set<string>();
  for (const schema of parameters) if (isObject(schema) && typeof schema['$schema'] === 'string') named.add(schema['$schema']);
  return named.size === 1 ? [...named][0]! : null;
}

/** The rules of a custom tool's call, `<prefix>call` the call itself. */
function customRules(tool: Extract<ToolCallGrammar, { kind: 'custom' }>, argumentsKey: string, prefix: string): string[] {
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
