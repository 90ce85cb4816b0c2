// GrammarSpec (src/contracts/generate.ts) as xgrammar input: the cache key, the limits checked
// before anything is compiled, and a choice among strings as an EBNF alternation. Pure.

import type { GrammarSpec } from '../contracts/generate.js';
import { invalidArg } from '../errors.js';

/**
 * The largest spec text compiled. xgrammar's compile is one synchronous WASM call that cannot be
 * interrupted, so its time is capped through its input: compile time grows with the schema, and
 * at this size the schemas measured compile well under a second.
 */
export const MAX_SPEC_CHARS = 32 * 1024;
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
  }
}

const BOUNDS = ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum'] as const;
const hasNonAscii = (value: unknown): boolean => typeof value === 'string' && /[\u0080-\uffff]/.test(value);

/**
 * The JSON-schema features xgrammar 0.1.27 accepts but does not enforce, found by the random
 * walks (test/unit/grammar/random-walk.test.ts): bounds on "type": "number" (it produced 1.54
 * under maximum 1), and non-ASCII strings in enum / const (its converter's \u escapes absorb a
 * following hex letter, so "ïc" becomes U+0EFC). Refused rather than silently broken.
 */
export function unenforcedSchemaFeature(schema: unknown): string | null {
  if (Array.isArray(schema)) {
    for (const item of schema) {
      const found = unenforcedSchemaFeature(item);
      if (found) return found;
    }
    return null;
  }
  if (typeof schema !== 'object' || schema === null) return null;
  const node = schema as Record<string, unknown>;
  const types = Array.isArray(node.type) ? node.type : [node.type];
  if (types.includes('number') && BOUNDS.some((b) => b in node)) return `${BOUNDS.filter((b) => b in node).join('/')} on "type": "number" (use "type": "integer", or leave the number unbounded)`;
  if ((Array.isArray(node.enum) && node.enum.some(hasNonAscii)) || hasNonAscii(node.const)) return 'non-ASCII strings in enum or const';
  if (typeof node.pattern === 'string' && ('maxLength' in node || 'minLength' in node)) return 'minLength/maxLength together with pattern (state the length in the pattern)';
  for (const value of Object.values(node)) {
    const found = unenforcedSchemaFeature(value);
    if (found) return found;
  }
  return null;
}

/** Throws INVALID_ARG naming the feature when a spec is empty or past the size limits. */
export function checkSpecLimits(spec: GrammarSpec): void {
  const feature = specFeature(spec);
  const text = spec.kind === 'json_schema' ? spec.schema : spec.kind === 'regex' ? spec.pattern : spec.kind === 'ebnf' ? spec.grammar : spec.kind === 'choice' ? spec.choices.join('') : '';
  if (text.length > MAX_SPEC_CHARS) throw invalidArg(`the ${feature} is too large to compile: ${text.length} characters, at most ${MAX_SPEC_CHARS}`);
  if (spec.kind === 'choice') {
    if (spec.choices.length === 0) throw invalidArg('choice needs at least one string');
    if (spec.choices.length > MAX_CHOICES) throw invalidArg(`choice has ${spec.choices.length} strings, at most ${MAX_CHOICES}`);
    if (spec.choices.some((c) => c.length === 0)) throw invalidArg('choice strings must not be empty');
  }
  if ((spec.kind === 'regex' || spec.kind === 'ebnf' || spec.kind === 'json_schema') && text.trim().length === 0) throw invalidArg(`the ${feature} is empty`);
  if (spec.kind === 'json_schema') {
    let parsed: unknown;
    try {
      parsed = JSON.parse(spec.schema);
    } catch {
      return; // the checker names the syntax error
    }
    const unenforced = unenforcedSchemaFeature(parsed);
    if (unenforced) throw invalidArg(`the JSON schema uses a feature the grammar engine cannot enforce: ${unenforced}`);
  }
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

/** Canonical JSON text with every non-ASCII UTF-16 unit as a \uXXXX escape (the same JSON value, ASCII only; see ebnfLiteral). */
export function asciiJson(text: string): string {
  return text.replace(/[\u0080-\uffff]/g, (ch) => `\\u${hex(ch.charCodeAt(0), 4)}`);
}

/** Exactly one of the strings (vLLM's choice), as an EBNF alternation. */
export function choiceGrammar(choices: readonly string[]): string {
  return `root ::= ${choices.map(ebnfLiteral).join(' | ')}`;
}
