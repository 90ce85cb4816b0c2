// GrammarSpec (src/contracts/generate.ts) as xgrammar input: the cache key, the limits checked
// before anything is compiled, and a choice among strings as an EBNF alternation. Pure.

import type { GrammarSpec } from '../contracts/generate.js';
import { invalidArg } from '../errors.js';

/**
 * The largest spec text translated and compiled. A compile's time is bounded by
 * --structured-outputs-compile-timeout-secs (a probe thread, terminated past it); this bounds the
 * work before it — translating the spec and parsing its grammar on the grammar worker, which no
 * bound interrupts: translating each of JSONSchemaBench's 11,299 schemas under this size took at
 * most 0.2 s (length-bounded strings capped by json-schema/string-schema.ts).
 */
export const MAX_SPEC_CHARS = 256 * 1024;
export const MAX_CHOICES = 512;

/** What a spec is called in errors: the feature the caller asked for. */
export function specFeature(spec: GrammarSpec): string {
  switch (spec.kind) {
    case 'json_object':
      return 'JSON object';
    case 'json_schema':
      return 'JSON schema';
    case 'regex':
      return 'regex';
    case 'choice':
      return 'choice';
    case 'ebnf':
      return 'EBNF grammar';
    case 'tool_calls':
      return 'tool calls grammar';
  }
}

/** One text per distinct constraint: equal specs share a compiled grammar. */
export function specKey(spec: GrammarSpec): string {
  switch (spec.kind) {
    case 'json_object':
      return 'json_object';
    case 'json_schema':
      return `json_schema:${spec.schema}`;
    case 'regex':
      return `regex:${spec.pattern}`;
    case 'choice':
      return `choice:${JSON.stringify(spec.choices)}`;
    case 'ebnf':
      return `ebnf:${spec.grammar}`;
    case 'tool_calls':
      return `tool_calls:${JSON.stringify(spec.calls)}`;
  }
}

/** Throws INVALID_ARG naming the feature when a spec is empty or past the size limits. */
export function checkSpecLimits(spec: GrammarSpec): void {
  const feature = specFeature(spec);
  const text =
    spec.kind === 'json_schema'
      ? spec.schema
      : spec.kind === 'regex'
        ? spec.pattern
        : spec.kind === 'ebnf'
          ? spec.grammar
          : spec.kind === 'choice'
            ? spec.choices.join('')
            : spec.kind === 'tool_calls'
              ? JSON.stringify(spec.calls)
              : '';
  if (text.length > MAX_SPEC_CHARS) throw invalidArg(`the ${feature} is too large to compile: ${text.length} characters, at most ${MAX_SPEC_CHARS}`);
  if (spec.kind === 'choice') {
    if (spec.choices.length === 0) throw invalidArg('choice needs at least one string');
    if (spec.choices.length > MAX_CHOICES) throw invalidArg(`choice has ${spec.choices.length} strings, at most ${MAX_CHOICES}`);
    if (spec.choices.some((c) => c.length === 0)) throw invalidArg('choice strings must not be empty');
  }
  if ((spec.kind === 'regex' || spec.kind === 'ebnf' || spec.kind === 'json_schema') && text.trim().length === 0) throw invalidArg(`the ${feature} is empty`);
}

const hex = (code: number, digits: number): string => code.toString(16).toUpperCase().padStart(digits, '0');

/**
 * A string as an EBNF expression: a sequence of quoted literals with quotes and backslashes
 * escaped, control characters as \xNN, and each character outside ASCII as its own "\UNNNNNNNN"
 * literal. The separate literal is not cosmetic: xgrammar's parser reads as many hex digits as
 * follow a \u, so "ï" then "c" as "\u00EFc" would be U+0EFC; a closing quote ends the digits.
 * (Raw non-ASCII text fared no better through the WASM binding.)
 */
export function ebnfLiteral(text: string): string {
  const parts: string[] = [];
  let run = '';
  for (const ch of text) {
    const code = ch.codePointAt(0)!;
    if (code > 0x7f) {
      if (run) parts.push(`"${run}"`);
      run = '';
      parts.push(`"\\U${hex(code, 8)}"`);
    } else if (ch === '"' || ch === '\\') run += `\\${ch}`;
    else if (code < 0x20 || code === 0x7f) run += `\\x${hex(code, 2)}`;
    else run += ch;
  }
  if (run || parts.length === 0) parts.push(`"${run}"`);
  return parts.length === 1 ? parts[0]! : `(${parts.join(' ')})`;
}

/**
 * A choice between literal texts, each followed by its own continuation (an EBNF expression, or
 * nothing), written as a trie: the alternatives of every choice start with different characters.
 * Not cosmetic: xgrammar 0.1.27 reads a choice whose literals share a prefix of two or more
 * characters and a suffix as a loop -- ("1.25" | "1.5") accepted "1.2225", ("abc5" | "ab5")
 * "abcc5" -- through its token masks too. Null when there is no text.
 */
export function ebnfLiteralChoice(entries: readonly { readonly text: string; readonly after?: string }[]): string | null {
  if (entries.length === 0) return null;
  const parts: string[] = [];
  const byFirst = new Map<string, { text: string; after?: string }[]>();
  for (const entry of entries) {
    if (entry.text === '') {
      parts.push(entry.after ?? '""');
      continue;
    }
    const first = String.fromCodePoint(entry.text.codePointAt(0)!);
    byFirst.set(first, [...(byFirst.get(first) ?? []), entry]);
  }
  for (const group of byFirst.values()) {
    // The group's longest common prefix, whole characters, then the rest of each as a choice.
    let prefix = [...group[0]!.text];
    for (const { text } of group.slice(1)) {
      const chars = [...text];
      let n = 0;
      while (n < prefix.length && n < chars.length && prefix[n] === chars[n]) n++;
      prefix = prefix.slice(0, n);
    }
    const head = prefix.join('');
    if (group.length === 1) {
      parts.push(group[0]!.after === undefined ? ebnfLiteral(head) : `${ebnfLiteral(head)} ${group[0]!.after}`);
      continue;
    }
    const rest = ebnfLiteralChoice(group.map(({ text, after }) => ({ text: text.slice(head.length), after })));
    parts.push(`${ebnfLiteral(head)} ${rest}`);
  }
  return parts.length === 1 ? parts[0]! : `(${parts.join(' | ')})`;
}

/** Exactly one of the strings (vLLM's choice), as an EBNF alternation (a trie: see ebnfLiteralChoice). */
export function choiceGrammar(choices: readonly string[]): string {
  return `root ::= ${ebnfLiteralChoice(choices.map((text) => ({ text })))}`;
}
