// The proof that the mask is right: with the tiny model's real Qwen3 tokenizer, random walks that
// sample only tokens the mask allows (until the grammar terminates or a token cap) always produce
// text the constraint accepts: JSON that parses and validates against its schema (ajv), strings
// that fully match their regex, one of the choices.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GrammarSpec } from '../../../src/contracts/generate.js';
import { GrammarEngine } from '../../../src/grammar/grammar-engine.js';
import type { ConstraintMatcher } from '../../../src/grammar/matcher.js';
import { maskAllows } from '../../../src/contracts/token-mask.js';
import { createTokenizer } from '../../../src/tokenizer/model-files.js';
import { DEFAULT_REPOSITORY } from '../../../models/default-repository.js';
import { SCHEMAS } from '../../../bench/scenarios/structured/schemas.js';
import { seededRandom as rng } from '../../support/seeded-random.js';

const MODEL_DIR = join(DEFAULT_REPOSITORY, 'qwen3-tiny', '1');
const LOGITS_VOCAB = 151_936;
const STOP = [151_645, 151_643];
// 20 seeded walks per grammar, as the issue asks: 1,100 over the JSON schemas (the raw-tab gap showed within the first few).
const WALKS = 20;
const TOKEN_CAP = 100;

let engine: GrammarEngine;
let decode: (ids: number[]) => string;
/** Single printable-ASCII tokens: a walk that leans on them reaches the grammar's end in few steps. */
let shortTokens: number[];
const maskMs: number[] = [];

/** A uniform pick among allowed tokens, half the time among short ones (and stop tokens). */
function pick(mask: Int32Array, random: () => number): number {
  if (random() < 0.7) {
    const short = [...shortTokens, ...STOP].filter((id) => maskAllows(mask, id));
    if (short.length > 0) return short[Math.floor(random() * short.length)]!;
  }
  for (let tries = 0; tries < 64; tries++) {
    const id = Math.floor(random() * LOGITS_VOCAB);
    if (maskAllows(mask, id)) return id;
  }
  // A restrictive mask (a structural state): list its allowed ids word by word, skipping empty words.
  const allowed: number[] = [];
  for (let word = 0; word < mask.length; word++) {
    const bits = mask[word]!;
    if (bits === 0) continue;
    for (let bit = 0; bit < 32; bit++) if ((bits >>> bit) & 1 && word * 32 + bit < LOGITS_VOCAB) allowed.push(word * 32 + bit);
  }
  if (allowed.length === 0) throw new Error('the mask allows no token');
  return allowed[Math.floor(random() * allowed.length)]!;
}

/** One walk; the text when the grammar terminated within the cap, else null. */
async function walk(matcher: ConstraintMatcher, seed: number): Promise<string | null> {
  const random = rng(seed);
  const out: number[] = [];
  while (out.length < TOKEN_CAP) {
    const started = performance.now();
    const mask = await matcher.nextTokenMask();
    maskMs.push(performance.now() - started);
    const id = pick(mask, random);
    // The message decodes the walk so far: built only on a failure, not at every step.
    if (!matcher.accept(id)) expect.fail(`token ${id} was allowed by the mask but refused after ${JSON.stringify(decode(out))} (${out.join(',')})`);
    if (matcher.isTerminated()) return decode(out);
    out.push(id);
  }
  return null;
}

async function walks(spec: GrammarSpec, accepts: (text: string) => boolean, seedBase: number): Promise<{ completed: number; bad: string[] }> {
  const constraint = await engine.compile(spec);
  let completed = 0;
  const bad: string[] = [];
  for (let i = 0; i < WALKS; i++) {
    const matcher = await engine.matcher(constraint, STOP);
    try {
      const text = await walk(matcher, seedBase * 1000 + i);
      if (text === null) continue;
      completed++;
      if (!accepts(text)) bad.push(text);
    } finally {
      matcher.dispose();
    }
  }
  return { completed, bad };
}

/**
 * WALKS walks over each of SCHEMAS (compiled for the given key order): how many finished, the
 * finished outputs ajv refuses (or that do not parse), and how many schemas had an object the
 * guard follows in any order.
 */
async function schemaWalks(order: 'schema' | 'any', seedBase: number): Promise<{ completed: number; failures: string[]; loosened: number }> {
  const ajv = new Ajv2020({ strict: false });
  addFormats.default(ajv);
  let completed = 0;
  let loosened = 0;
  const failures: string[] = [];
  for (const [i, schema] of SCHEMAS.entries()) {
    const validate = ajv.compile(schema);
    const spec: GrammarSpec = { kind: 'json_schema', schema: JSON.stringify(order === 'any' ? { 'x-property-order': 'any', ...(schema as object) } : schema) };
    if (((await engine.compile(spec)).guard?.anyOrder.size ?? 0) > 0) loosened++;
    const parsesValid = (text: string): boolean => {
      try {
        return validate(JSON.parse(text)) === true;
      } catch {
        return false;
      }
    };
    const result = await walks(spec, parsesValid, seedBase + i);
    completed += result.completed;
    failures.push(...result.bad.map((text) => `schema ${i} ${JSON.stringify(schema)}: ${JSON.stringify(text)}`));
  }
  return { completed, failures, loosened };
}

const percentile = (xs: readonly number[], p: number): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;

beforeAll(async () => {
  const started = performance.now();
  engine = await GrammarEngine.open({ tokenizerPath: join(MODEL_DIR, 'tokenizer.json'), logitsVocabSize: LOGITS_VOCAB });
  const tokenizer = createTokenizer({
    tokenizerJson: JSON.parse(readFileSync(join(MODEL_DIR, 'tokenizer.json'), 'utf8')),
    tokenizerConfig: JSON.parse(readFileSync(join(MODEL_DIR, 'tokenizer_config.json'), 'utf8')),
  });
  decode = (ids) => (ids.length === 0 ? '' : tokenizer.decode(ids, { skip_special_tokens: false }));
  shortTokens = [];
  for (let c = 0x20; c < 0x7f; c++) {
    const id = tokenizer.token_to_id(c === 0x20 ? 'Ġ' : String.fromCharCode(c));
    if (id !== undefined) shortTokens.push(id);
  }
  console.log(`grammar engine open (tokenizer info): ${engine.stats().tokenizerInfoMs.toFixed(0)} ms (with file read ${(performance.now() - started).toFixed(0)} ms)`);
}, 120_000);

afterAll(() => {
  if (maskMs.length > 0) console.log(`mask: ${maskMs.length} masks, p50 ${percentile(maskMs, 50).toFixed(3)} ms, p99 ${percentile(maskMs, 99).toFixed(3)} ms`);
});

describe('constrained random walks on the Qwen3 vocabulary', () => {
  it(`${SCHEMAS.length} JSON schemas × ${WALKS} walks: every completed output parses and validates (ajv)`, async () => {
    expect(SCHEMAS.length).toBeGreaterThanOrEqual(50);
    const { completed, failures } = await schemaWalks('schema', 0);
    const compile = engine.stats().compileMs;
    console.log(`json_schema: ${completed} of ${SCHEMAS.length * WALKS} walks completed; compile cold p50 ${percentile(compile, 50).toFixed(1)} ms, p99 ${percentile(compile, 99).toFixed(1)} ms`);
    expect(failures).toEqual([]);
    // Most walks must finish, or the check proves little.
    expect(completed).toBeGreaterThan(SCHEMAS.length * WALKS * 0.6);
  }, 240_000);

  it(`the same ${SCHEMAS.length} schemas with "x-property-order": "any" × ${WALKS} walks: every completed output validates, keys in any order`, async () => {
    const { completed, failures, loosened } = await schemaWalks('any', 500);
    expect(failures).toEqual([]);
    expect(completed).toBeGreaterThan(SCHEMAS.length * WALKS * 0.6);
    // Not vacuous: most of these schemas have an object the guard follows in any order.
    expect(loosened).toBeGreaterThan(SCHEMAS.length / 3);
  }, 240_000);

  // Key languages written with regex derivatives and the RFC 3986 formats, through real token masks.
  it.each([
    { type: 'object', properties: { 'x-id': { type: 'integer' } }, patternProperties: { '^x-': { type: 'integer', maximum: 9 } }, required: ['x-id'], additionalProperties: false },
    { type: 'object', propertyNames: { pattern: '^[a-z]{1,3}$' }, additionalProperties: { type: 'boolean' } },
    { type: 'object', properties: { ab: { type: 'null' } }, propertyNames: { pattern: 'b' }, additionalProperties: { type: 'null' } },
    { type: 'array', items: { type: 'string', format: 'uri' }, minItems: 1, maxItems: 1 },
    { type: 'string', format: 'uri-reference' },
    // Presence constraints: the member rules carry which keys are open (presence-constraints.ts).
    {
      type: 'object',
      properties: { ssn: { type: 'integer' }, ein: { type: 'integer' }, itin: { type: 'integer' } },
      oneOf: [{ required: ['ssn'] }, { required: ['ein'] }, { required: ['itin'] }],
      additionalProperties: false,
    },
    {
      type: 'object',
      properties: { a: { type: 'integer' }, b: { type: 'null' } },
      dependentRequired: { a: ['b', 'c'] },
      minProperties: 2,
      maxProperties: 3,
      additionalProperties: { type: 'boolean' },
    },
    { type: 'object', properties: { a: { type: 'boolean' }, b: { type: 'integer' } }, dependentSchemas: { a: { properties: { b: { minimum: 5 } }, required: ['b'] } }, not: { required: ['b', 'c'] } },
    // Formats, unique items, multiples and numeric oneOf (string-formats.ts, unique-items.ts, multiple-of.ts, numeric-one-of.ts).
    { type: 'array', items: { enum: ['GET', 'POST', 1, true, null] }, uniqueItems: true, minItems: 1 },
    {
      type: 'object',
      properties: { x: { type: 'number', multipleOf: 0.25, minimum: -3, exclusiveMaximum: 40 }, y: { type: 'integer', multipleOf: 16, minimum: -2032, maximum: 2031 } },
      required: ['x', 'y'],
    },
    {
      oneOf: [
        { type: 'integer', maximum: 3 },
        { type: 'number', exclusiveMinimum: -2.5, maximum: 7.25 },
        { type: 'string', format: 'byte' },
      ],
    },
    { type: 'array', items: { type: 'string', format: 'uri', pattern: '^https?://' }, minItems: 1, maxItems: 1 },
    { type: 'object', properties: { u: { type: 'string', format: 'url' }, p: { type: 'string', format: 'path', maxLength: 5 } }, required: ['u', 'p'] },
  ])(
    '%j × 20 walks: every completed output validates (ajv)',
    async (schema) => {
      const ajv = new Ajv2020({ strict: false });
      addFormats.default(ajv);
      const validate = ajv.compile(schema);
      const result = await walks(
        { kind: 'json_schema', schema: JSON.stringify(schema) },
        (text) => {
          try {
            return validate(JSON.parse(text)) === true;
          } catch {
            return false;
          }
        },
        900,
      );
      expect(result.bad).toEqual([]);
      // Unbounded keys and URIs often run past the token cap; some walks must still finish.
      expect(result.completed).toBeGreaterThan(0);
    },
    120_000,
  );

  it('a cached compile is a lookup', async () => {
    const times: number[] = [];
    for (const schema of SCHEMAS) {
      const started = performance.now();
      await engine.compile({ kind: 'json_schema', schema: JSON.stringify(schema) });
      times.push(performance.now() - started);
    }
    console.log(`json_schema cached compile: p50 ${percentile(times, 50).toFixed(3)} ms, p99 ${percentile(times, 99).toFixed(3)} ms`);
    expect(percentile(times, 50)).toBeLessThan(5);
  });

  it.each([['^[a-z]{2,5}$'.slice(1, -1)], ['\\d{3}-\\d{2}'], ['(cat|dog|bird)s?'], ['[A-Z][a-z]+ [0-9]{1,3}'], ['(ab)+c?'], ['0x[0-9a-f]{4}']])(
    'regex %s: every completed walk fully matches',
    async (pattern) => {
      const re = new RegExp(`^(?:${pattern})$`);
      const result = await walks({ kind: 'regex', pattern }, (text) => re.test(text), 7);
      expect(result.bad).toEqual([]);
      expect(result.completed).toBeGreaterThan(WALKS / 2);
    },
  );

  it('choice: every walk ends on one of the strings, quotes and backslashes included', async () => {
    const choices = ['yes', 'no', 'maybe so', 'say "hi"', 'back\\slash', 'tab\there', 'ünïcødé', 'emoji 🙂'];
    const result = await walks({ kind: 'choice', choices }, (text) => choices.includes(text), 8);
    expect(result.bad).toEqual([]);
    expect(result.completed).toBe(WALKS);
  });

  it('EBNF and json_object', async () => {
    const ebnf = await walks({ kind: 'ebnf', grammar: 'root ::= "(" num ("+" num)* ")"\nnum ::= [0-9]+' }, (text) => /^\(\d+(\+\d+)*\)$/.test(text), 9);
    expect(ebnf.bad).toEqual([]);
    expect(ebnf.completed).toBeGreaterThan(WALKS / 2);
    const object = await walks(
      { kind: 'json_object' },
      (text) => {
        try {
          const v: unknown = JSON.parse(text);
          return typeof v === 'object' && v !== null && !Array.isArray(v);
        } catch {
          return false;
        }
      },
      10,
    );
    expect(object.bad).toEqual([]);
  });
});

describe('refusals', () => {
  it.each<[string, GrammarSpec, RegExp]>([
    ['unknown type', { kind: 'json_schema', schema: '{"type": "foo"}' }, /cannot enforce: type at #\/type cannot be enforced: unknown type "foo"/],
    ['dangling $ref', { kind: 'json_schema', schema: '{"$ref": "#/$defs/missing"}' }, /\$ref at #\/\$ref cannot be enforced: "#\/\$defs\/missing" does not resolve/],
    ['schema not JSON', { kind: 'json_schema', schema: 'not json' }, /JSON schema is not valid JSON/],
    ['unclosed regex group', { kind: 'regex', pattern: '((' }, /regex cannot be compiled/],
    ['undefined EBNF rule', { kind: 'ebnf', grammar: 'root ::= undefined_rule' }, /EBNF grammar cannot be compiled: .*Rule "undefined_rule" is not defined/],
    ['not', { kind: 'json_schema', schema: '{"properties":{"a":{"not":{"pattern":"^x","minLength":2}}},"type":"object"}' }, /not at #\/properties\/a\/not cannot be enforced/],
    ['an unknown format', { kind: 'json_schema', schema: '{"format":"iri","type":"string"}' }, /format at #\/format cannot be enforced: format "iri" is not enforced/],
    ['a lookahead inside a group', { kind: 'json_schema', schema: '{"pattern":"^(a(?=b))","type":"string"}' }, /pattern at #\/pattern cannot be enforced: .*lookaheads inside a group/],
    ['a lookbehind', { kind: 'json_schema', schema: '{"pattern":"(?<=a)b","type":"string"}' }, /pattern at #\/pattern cannot be enforced: lookbehind/],
    ['uniqueItems', { kind: 'json_schema', schema: '{"type":"array","uniqueItems":true}' }, /uniqueItems at #\/uniqueItems/],
    [
      'if on arrays',
      { kind: 'json_schema', schema: '{"type":"array","if":{"items":{"type":"string"}},"then":{"maxItems":2}}' },
      /if at #\/if cannot be enforced: is translated only where each condition asks one property/,
    ],
    [
      'conditions on two keys',
      { kind: 'json_schema', schema: '{"allOf":[{"if":{"properties":{"a":{"const":1}}},"then":{"required":["b"]}},{"if":{"properties":{"b":{"const":1}}},"then":{"required":["a"]}}]}' },
      /if at #\/if cannot be enforced: conditions on different keys/,
    ],
    ['no choices', { kind: 'choice', choices: [] }, /choice needs at least one string/],
    ['oversized schema', { kind: 'json_schema', schema: JSON.stringify({ enum: Array.from({ length: 30_000 }, (_, i) => `value-${i}`) }) }, /too large to compile/],
  ])('%s is INVALID_ARG naming the feature', async (_, spec, message) => {
    await expect(engine.compile(spec)).rejects.toMatchObject({ code: 'INVALID_ARG', message: expect.stringMatching(message) });
  });

  it('hundreds of refusals leave the engine compiling and matching', async () => {
    for (let i = 0; i < 100; i++) await expect(engine.compile({ kind: 'json_schema', schema: `{"type": "bogus${i}"}` })).rejects.toMatchObject({ code: 'INVALID_ARG' });
    const result = await walks({ kind: 'json_schema', schema: JSON.stringify(SCHEMAS[25]) }, (text) => typeof JSON.parse(text) === 'object', 11);
    expect(result.bad).toEqual([]);
  }, 120_000);
});
