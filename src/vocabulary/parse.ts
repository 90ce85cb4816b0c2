// Checking a generation's parameters against the declaration, and turning the first rejection
// into an INVALID_ARG ConveyorError whose message and `param` use the caller's wire names.

import type { z } from 'zod';
import { tokenIds } from './rules.js';
import { invalidArg, type ConveyorError } from '../errors.js';
import { GENERATION_FIELDS, generationParamsSchema, type GenerationField, type GenerationLimits, type GenerationParams } from './declaration.js';

/** Parameters as a front end received them: declared names, values not yet checked. */
export type UncheckedParams = { readonly [F in GenerationField]?: unknown };

/** Declared field → the name the caller's protocol gives it, where the two differ. */
export type WireNames = { readonly [F in GenerationField]?: string };

const isField = (name: string): name is GenerationField => (GENERATION_FIELDS as readonly string[]).includes(name);

/** The name a caller knows a field by. */
export function wireName(field: GenerationField, names: WireNames = {}): string {
  return names[field] ?? field;
}

/** Checks every declared field and the rules between them; throws on the first rejection, changing nothing. */
export function parseGenerationParams(raw: UncheckedParams, limits: GenerationLimits, names: WireNames = {}): GenerationParams {
  const result = generationParamsSchema(limits).safeParse(raw);
  if (result.success) return result.data;
  throw rejection(result.error.issues[0]!, names);
}

function rejection(issue: z.core.$ZodIssue, names: WireNames): ConveyorError {
  const head = issue.path[0];
  const field = typeof head === 'string' && isField(head) ? head : undefined;
  // A part of a structured field (response_format.json_schema.schema) is named by its path.
  const below = issue.path.slice(1).map((key) => (typeof key === 'number' ? `[${key}]` : `.${String(key)}`));
  const own = field === undefined ? 'the parameters' : wireName(field, names) + below.join('');
  const message = issue.message.replace(/\{(\w*)\}/g, (_, other: string) => (other === '' ? own : isField(other) ? wireName(other, names) : other));
  return invalidArg(message, field === undefined ? undefined : own);
}

const tokenIdRules = new Map<number, ReturnType<typeof tokenIds>>();

/** A list of token ids outside the parameters (a prompt of ids), checked by the rule stop_token_ids follows. */
export function checkTokenIds(value: unknown, name: string, vocabSize: number): number[] {
  if (value === undefined || value === null) return [];
  let rule = tokenIdRules.get(vocabSize);
  if (!rule) {
    rule = tokenIds(vocabSize);
    tokenIdRules.set(vocabSize, rule);
  }
  const result = rule.safeParse(value);
  if (result.success) return result.data;
  throw invalidArg(result.error.issues[0]!.message.replaceAll('{}', name), name);
}
