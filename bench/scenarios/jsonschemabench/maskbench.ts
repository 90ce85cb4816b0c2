// MaskBench-style measurement of one split on the grammar engine directly (no model): each schema
// is compiled as the server compiles a response_format json_schema (strict: properties a schema
// does not name are not generated; the compile bound through the same probe thread the server
// uses); then every test instance is tokenized in the grammar's canonical form and fed to a fresh
// matcher token by token, ending with the stop token. A valid instance must be accepted whole, an
// invalid one refused somewhere.
//
// The canonical form: the grammar writes one layout (", " and ": ", JSON.stringify's numbers and
// escapes), so each instance is re-serialized in that layout with its own key order (layoutJson).
// MaskBench reordered its instances to follow llguidance's stable property order, but some still
// list keys in another order than their schema's: every engine MaskBench ran rejects those, and so
// does ours in the schema's order; with --property-order any the schemas are compiled with
// "x-property-order": "any" (json-schema/any-order.ts), where the guard can follow the keys. A valid instance the strict grammar cannot express — one holding a
// property its schema does not name where the schema is silent on additionalProperties, which
// strict mode does not generate — is counted apart, not as a failure: it is the valid instance
// that fails ajv once every object schema (any object keyword, or type object) without
// additionalProperties gets additionalProperties: false (beside patternProperties too: the keys
// no pattern matches are not generated either). A bare
// {"type": "object"} is thus the empty object only, as the grammar generates it.

import { Ajv } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { maskAllows } from '../../../src/contracts/token-mask.js';
import type { TextTokenizer } from '../../../src/contracts/tokenizer.js';
import { PROPERTY_ORDER_KEYWORD } from '../../../src/contracts/generate.js';
import type { GrammarEngine } from '../../../src/grammar/grammar-engine.js';
import { layoutJson } from '../../../src/grammar/schema-grammar.js';
import { PRESENCE_COMBINATORS, presenceOf } from '../../../src/grammar/json-schema/presence-constraints.js';
import { OBJECT_KEYWORDS, PRESENCE_KEYWORDS } from '../../../src/grammar/json-schema/schema-model.js';
import type { MaskBenchSchema } from './data.js';

type Json = Parameters<typeof layoutJson>[0];

export interface SplitOutcome {
  readonly split: string;
  readonly propertyOrder: PropertyOrder;
  readonly schemas: number;
  readonly compiled: number;
  /** Refusals by reason (the message up to its first colon), for the summary. */
  readonly refusals: ReadonlyMap<string, number>;
  /** Compile time of each compiled schema (xgrammar's compile on the engine, after the probe), ms. */
  readonly compileMs: readonly number[];
  /** Per schema, vet + probe + compile: what a request waits for on a cache miss, ms. */
  readonly firstCompileMs: readonly number[];
  /** disputed: labelled valid, but ajv finds the instance invalid under its schema (the label is wrong), and rejected. */
  readonly valid: { readonly total: number; readonly accepted: number; readonly notExpressible: number; readonly disputed: number; readonly rejected: number };
  readonly invalid: { readonly total: number; readonly rejected: number; readonly accepted: number };
  /** Instances holding an integer past 2^53: JSON.parse rounded it, so its own text cannot be fed; skipped. */
  readonly unrepresentable: number;
  /** Mask time per token while matching valid instances, ms. */
  readonly maskMs: readonly number[];
  /** A few failures, for the summary: schema id and what went wrong. */
  readonly failures: readonly string[];
}

/** The key order the grammars are compiled for: the schema's (the default), or any ("x-property-order": "any"). */
export type PropertyOrder = 'schema' | 'any';

export interface MatchContext {
  readonly propertyOrder: PropertyOrder;
  readonly engine: GrammarEngine;
  readonly tokenizer: TextTokenizer;
  readonly stopTokenId: number;
  readonly log: (line: string) => void;
}

/** The schema with additionalProperties: false on every object schema that says nothing about unnamed properties (the grammar's strict rule). */
export function strictSchema(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(strictSchema);
  if (typeof schema !== 'object' || schema === null) return schema;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === 'enum' || key === 'const' || key === 'examples' || key === 'default') out[key] = value;
    // Subschemas that only say which keys are present (oneOf: [{required: [...]}, ...]) are statements about the enclosing object, not object schemas of their own.
    else if (PRESENCE_COMBINATORS.includes(key) && speaksOfKeysOnly(value)) out[key] = value;
    else out[key] = strictSchema(value);
  }
  // The grammar reads any object keyword as an object schema (propertyNames alone included), and so any presence constraint.
  const objectSchema =
    OBJECT_KEYWORDS.some((k) => k in out) ||
    PRESENCE_KEYWORDS.some((k) => k in out) ||
    PRESENCE_COMBINATORS.some((k) => k in out && speaksOfKeysOnly(out[k])) ||
    out['type'] === 'object' ||
    (Array.isArray(out['type']) && out['type'].includes('object'));
  if (objectSchema && !('additionalProperties' in out) && !('unevaluatedProperties' in out)) out['additionalProperties'] = false;
  return out;
}

/** Subschemas read literally ($refs not followed: a referenced subschema counts as saying more). */
const LITERAL = { deref: (node: Json): Json => node };

/** Whether a subschema (or each of a list) only says which keys an object has, as the grammar reads presence constraints. */
function speaksOfKeysOnly(value: unknown): boolean {
  const list = Array.isArray(value) ? value : [value];
  return list.length > 0 && list.every((v) => presenceOf(LITERAL, v as Json, '#') !== null);
}

function validator(schema: unknown): ((data: unknown) => boolean) | null {
  // A pattern valid only without the u flag (`\,`, an identity escape) makes ajv refuse the whole schema; the grammar reads it, so the judge reads it too.
  return validatorWith(schema, true) ?? validatorWith(schema, false);
}

function validatorWith(schema: unknown, unicodeRegExp: boolean): ((data: unknown) => boolean) | null {
  const draft2020 = typeof schema === 'object' && schema !== null && String((schema as Record<string, unknown>)['$schema'] ?? '').includes('2020-12');
  const options = { strict: false, allErrors: false, validateFormats: true, unicodeRegExp };
  const ajv = draft2020 ? new Ajv2020(options) : new Ajv(options);
  addFormats.default(ajv);
  // Draft 4's schema id is `id`, which ajv 8 refuses to compile ("use $id"); the grammar reads it as an annotation, and so does the judge.
  if (!draft2020) ajv.removeKeyword('id');
  // ajv's draft-07 class refuses other drafts' $schema URIs (draft-04 is most of GitHub's): it judges them by draft-07's rules.
  const judged = !draft2020 && typeof schema === 'object' && schema !== null ? { ...(schema as Record<string, unknown>), $schema: undefined } : schema;
  try {
    const validate = ajv.compile(judged as object);
    return (data) => validate(data) === true;
  } catch {
    return null;
  }
}

/** Whether the matcher takes the whole text and then the stop token; mask times go to `maskMs` when given. */
async function matches(context: MatchContext, matcher: Awaited<ReturnType<GrammarEngine['matcher']>>, text: string, maskMs?: number[]): Promise<boolean> {
  const ids = [...context.tokenizer.encode(text, { add_special_tokens: false }).ids, context.stopTokenId];
  for (const id of ids) {
    if (maskMs) {
      const started = performance.now();
      const mask = await matcher.nextTokenMask();
      maskMs.push(performance.now() - started);
      if (!maskAllows(mask, id)) return false;
    }
    if (!matcher.accept(id)) return false;
  }
  return matcher.isTerminated();
}

export async function measureSplit(context: MatchContext, split: string, schemas: readonly MaskBenchSchema[]): Promise<SplitOutcome> {
  const refusals = new Map<string, number>();
  const compileMs: number[] = [];
  const firstCompileMs: number[] = [];
  const maskMs: number[] = [];
  const failures: string[] = [];
  const valid = { total: 0, accepted: 0, notExpressible: 0, disputed: 0, rejected: 0 };
  const invalid = { total: 0, rejected: 0, accepted: 0 };
  let compiled = 0;
  let unrepresentable = 0;
  for (const [i, entry] of schemas.entries()) {
    // The engine keeps its last 1,000 compile times: a compile is known by its cache miss, its time by the last entry.
    const missesBefore = context.engine.stats().cacheMisses;
    const started = performance.now();
    let constraint: Awaited<ReturnType<GrammarEngine['compile']>>;
    try {
      const schema = context.propertyOrder === 'any' && typeof entry.schema === 'object' && entry.schema !== null ? { ...entry.schema, [PROPERTY_ORDER_KEYWORD]: 'any' } : entry.schema;
      constraint = await context.engine.compile({ kind: 'json_schema', schema: JSON.stringify(schema) });
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      // "keyword at #/path cannot be enforced: why" counts by keyword; other refusals by their words before any detail.
      const keyword = / enforce: (\S+) at #/.exec(message)?.[1];
      const key = keyword ?? message.split(/: | \(/)[0]!.slice(0, 80);
      refusals.set(key, (refusals.get(key) ?? 0) + 1);
      context.log(`${split} ${i + 1}/${schemas.length} ${entry.id}: refused (${message.slice(0, 160)})`);
      continue;
    }
    compiled++;
    firstCompileMs.push(performance.now() - started);
    const stats = context.engine.stats();
    if (stats.cacheMisses > missesBefore && stats.compileMs.length > 0) compileMs.push(stats.compileMs.at(-1)!);
    const validate = validator(entry.schema);
    const validateStrict = validator(strictSchema(entry.schema));
    for (const test of entry.tests) {
      if (holdsUnsafeInteger(test.data as Json)) {
        unrepresentable++;
        continue;
      }
      const text = layoutJson(test.data as Json);
      const matcher = await context.engine.matcher(constraint, [context.stopTokenId]);
      try {
        if (test.valid) {
          valid.total++;
          if (await matches(context, matcher, text, maskMs)) valid.accepted++;
          else if (validate?.(test.data) && validateStrict && !validateStrict(test.data)) valid.notExpressible++;
          else if (validate !== null && !validate(test.data)) {
            valid.disputed++;
            if (failures.length < 8) failures.push(`${split}/${entry.id}: valid by its label, invalid by ajv, rejected: ${text.slice(0, 120)}`);
          } else {
            valid.rejected++;
            if (failures.length < 8) failures.push(`${split}/${entry.id}: valid instance rejected: ${text.slice(0, 120)}`);
          }
        } else {
          invalid.total++;
          if (await matches(context, matcher, text)) {
            invalid.accepted++;
            if (failures.length < 8) failures.push(`${split}/${entry.id}: invalid instance accepted: ${text.slice(0, 120)}`);
          } else invalid.rejected++;
        }
      } finally {
        matcher.dispose();
      }
    }
    context.log(`${split} ${i + 1}/${schemas.length} ${entry.id}: compiled in ${firstCompileMs.at(-1)!.toFixed(0)} ms, ${entry.tests.length} tests`);
  }
  return { split, propertyOrder: context.propertyOrder, schemas: schemas.length, compiled, refusals, compileMs, firstCompileMs, valid, invalid, unrepresentable, maskMs, failures };
}

/** Whether a parsed value holds a number past the integers a double holds exactly (its text was rounded). */
function holdsUnsafeInteger(value: Json): boolean {
  if (typeof value === 'number') return Math.abs(value) > Number.MAX_SAFE_INTEGER;
  if (Array.isArray(value)) return value.some(holdsUnsafeInteger);
  if (typeof value === 'object' && value !== null) return Object.values(value).some(holdsUnsafeInteger);
  return false;
}
