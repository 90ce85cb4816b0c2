// The structured-output fields of the vocabulary, each translated into the engine's GrammarSpec
// (src/contracts/generate.ts): OpenAI's response_format, vLLM's structured_outputs object and its
// older guided_json / guided_regex / guided_choice / guided_grammar. Each field's value is
// checked here, on the main thread, before admission; that only one of them constrains a request
// is a rule between fields (declaration.ts). A rejection's path names the part at fault
// (response_format.json_schema.schema), which parse.ts turns into the error's `param`.

import { z } from 'zod';
import type { GrammarSpec } from '../contracts/generate.js';
import { checkJsonSchema, SchemaRejection } from './json-schema-check.js';
import { isObject } from './json-object.js';
import { describe, valueKinds } from './rules.js';

export const MAX_REGEX_CHARS = 8 * 1024;
export const MAX_GRAMMAR_CHARS = 64 * 1024;
export const MAX_CHOICES = 1024;
export const MAX_CHOICE_CHARS = 64 * 1024;
/** OpenAI's rule for json_schema.name. */
const SCHEMA_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

type Path = readonly (string | number)[];
type Ctx = z.core.$RefinementCtx;

/** Adds the issue at `path` below the field and returns zod's "no value" marker. */
function fail(ctx: Ctx, message: string, path: Path = []): never {
  ctx.addIssue({ code: 'custom', message, path: [...path] });
  return z.NEVER as never;
}

/** Text from elsewhere (a parser's message) kept literal: `{x}` would read as a field-name template. */
export const literal = (text: string): string => text.replace(/\{(\w*)\}/g, '{ $1 }');

function jsonSchemaSpec(value: unknown, ctx: Ctx, path: Path): GrammarSpec {
  try {
    return { kind: 'json_schema', schema: checkJsonSchema(value) };
  } catch (error) {
    if (!(error instanceof SchemaRejection)) throw error;
    return fail(ctx, `{} ${literal(error.message)}`, path);
  }
}

function regexSpec(value: unknown, ctx: Ctx, path: Path): GrammarSpec {
  if (typeof value !== 'string' || value.length === 0) return fail(ctx, `{} must be a non-empty string (a regular expression), got ${describe(value)}`, path);
  if (value.length > MAX_REGEX_CHARS) return fail(ctx, `{} is ${value.length} characters; at most ${MAX_REGEX_CHARS} are allowed`, path);
  try {
    // JavaScript's syntax is a first check; the grammar compiler has the final word on what it supports.
    new RegExp(value);
  } catch (error) {
    return fail(ctx, `{} is not a valid regular expression: ${literal((error as Error).message)}`, path);
  }
  return { kind: 'regex', pattern: value };
}

function choiceSpec(value: unknown, ctx: Ctx, path: Path): GrammarSpec {
  if (!Array.isArray(value) || value.length === 0) return fail(ctx, '{} must be a non-empty array of strings', path);
  if (value.length > MAX_CHOICES) return fail(ctx, `{} has ${value.length} choices; at most ${MAX_CHOICES} are allowed`, path);
  let chars = 0;
  for (const [i, choice] of value.entries()) {
    if (typeof choice !== 'string' || choice.length === 0) return fail(ctx, `{} must contain non-empty strings, got ${describe(choice)}`, [...path, i]);
    chars += choice.length;
  }
  if (chars > MAX_CHOICE_CHARS) return fail(ctx, `{} has ${chars} characters in all; at most ${MAX_CHOICE_CHARS} are allowed`, path);
  return { kind: 'choice', choices: [...new Set(value as string[])] };
}

function grammarSpec(value: unknown, ctx: Ctx, path: Path): GrammarSpec {
  if (typeof value !== 'string' || value.trim().length === 0) return fail(ctx, `{} must be a non-empty string (an EBNF grammar), got ${describe(value)}`, path);
  if (value.length > MAX_GRAMMAR_CHARS) return fail(ctx, `{} is ${value.length} characters; at most ${MAX_GRAMMAR_CHARS} are allowed`, path);
  return { kind: 'ebnf', grammar: value };
}

function jsonObjectSpec(value: unknown, ctx: Ctx, path: Path): GrammarSpec | undefined {
  if (typeof value !== 'boolean') return fail(ctx, `{} must be a boolean, got ${describe(value)}`, path);
  return value ? { kind: 'json_object' } : undefined;
}

/** A field whose value becomes a GrammarSpec (undefined: no constraint), with its text-protocol value kind. */
function constraint(translate: (value: unknown, ctx: Ctx) => GrammarSpec | undefined, kind: 'object' | 'string' | 'strings') {
  return z
    .unknown()
    .transform((value, ctx): GrammarSpec | undefined => translate(value, ctx))
    .register(valueKinds, { kind });
}

/** OpenAI's response_format: text (no constraint), json_object, or json_schema {name, schema, strict, description}. */
export function responseFormat() {
  return constraint((value, ctx) => {
    if (!isObject(value)) return fail(ctx, '{} must be an object with a type');
    const { type } = value;
    if (type === 'text' || type === 'json_object') {
      onlyKeys(value, ['type'], ctx);
      return type === 'text' ? undefined : { kind: 'json_object' };
    }
    if (type !== 'json_schema') return fail(ctx, `{} must be one of "text", "json_object", "json_schema", got ${describe(type)}`, ['type']);
    onlyKeys(value, ['type', 'json_schema'], ctx);
    const spec = value['json_schema'];
    if (!isObject(spec)) return fail(ctx, '{} must be an object with a name and a schema', ['json_schema']);
    onlyKeys(spec, ['name', 'schema', 'strict', 'description'], ctx, ['json_schema']);
    const { name, strict, description } = spec;
    if (typeof name !== 'string' || !SCHEMA_NAME.test(name)) return fail(ctx, '{} must be 1 to 64 letters, digits, underscores or dashes', ['json_schema', 'name']);
    if (strict !== undefined && strict !== null && typeof strict !== 'boolean') return fail(ctx, `{} must be a boolean, got ${describe(strict)}`, ['json_schema', 'strict']);
    if (description !== undefined && description !== null && typeof description !== 'string') return fail(ctx, '{} must be a string', ['json_schema', 'description']);
    // OpenAI treats an absent schema as "any JSON object"; so does this server.
    if (spec['schema'] === undefined || spec['schema'] === null) return { kind: 'json_object' };
    return jsonSchemaSpec(spec['schema'], ctx, ['json_schema', 'schema']);
  }, 'object');
}

/** Refuses keys beyond `allowed`, so a typo is not silently a different request. */
function onlyKeys(value: Readonly<Record<string, unknown>>, allowed: readonly string[], ctx: Ctx, path: Path = []): void {
  const extra = Object.keys(value).find((key) => !allowed.includes(key) && value[key] !== undefined && value[key] !== null);
  if (extra !== undefined) fail(ctx, `{} is not supported here (known: ${allowed.join(', ')})`, [...path, extra]);
}

/** vLLM's structured_outputs members, each one kind of constraint. */
const STRUCTURED_OUTPUT_KINDS: Readonly<Record<string, (value: unknown, ctx: Ctx, path: Path) => GrammarSpec | undefined>> = {
  json: jsonSchemaSpec,
  regex: regexSpec,
  choice: choiceSpec,
  grammar: grammarSpec,
  json_object: jsonObjectSpec,
};

/** vLLM's structured_outputs: exactly one of json, regex, choice, grammar, json_object. */
export function structuredOutputs() {
  return constraint((value, ctx) => {
    if (!isObject(value)) return fail(ctx, `{} must be an object with one of ${Object.keys(STRUCTURED_OUTPUT_KINDS).join(', ')}`);
    const set = Object.keys(value).filter((key) => value[key] !== undefined && value[key] !== null);
    const unknown = set.find((key) => !Object.hasOwn(STRUCTURED_OUTPUT_KINDS, key));
    if (unknown !== undefined) return fail(ctx, `{} is not supported (known: ${Object.keys(STRUCTURED_OUTPUT_KINDS).join(', ')})`, [unknown]);
    if (set.length > 1) return fail(ctx, `{} cannot be combined with {structured_outputs}.${set[0]}: give one constraint`, [set[1]!]);
    if (set.length === 0) return undefined;
    const key = set[0]!;
    return STRUCTURED_OUTPUT_KINDS[key]!(value[key], ctx, [key]);
  }, 'object');
}

export const guidedJson = () => constraint((value, ctx) => jsonSchemaSpec(value, ctx, []), 'string');
export const guidedRegex = () => constraint((value, ctx) => regexSpec(value, ctx, []), 'string');
export const guidedChoice = () => constraint((value, ctx) => choiceSpec(value, ctx, []), 'strings');
export const guidedGrammar = () => constraint((value, ctx) => grammarSpec(value, ctx, []), 'string');

/** Every kind of output constraint a request may carry (what /v1/models advertises). */
export const GRAMMAR_KINDS: readonly GrammarSpec['kind'][] = ['json_object', 'json_schema', 'regex', 'choice', 'ebnf'];

/** The constraint fields in check order: when several are sent, the later one is refused. */
export const CONSTRAINT_FIELDS = ['response_format', 'structured_outputs', 'guided_json', 'guided_regex', 'guided_choice', 'guided_grammar'] as const;
