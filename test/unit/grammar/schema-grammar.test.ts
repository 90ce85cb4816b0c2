// The schema → grammar translation on its own (no vocabulary): for each schema, instances ajv
// calls valid are accepted by the grammar (written in the grammar's layout) and instances ajv
// calls invalid are refused; what cannot be enforced is refused naming the keyword and its path.
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_SCHEMA_DEPTH } from '../../../src/grammar/json-schema/schema-translator.js';
import { MAX_COUNTED_LENGTH, MAX_COUNTED_RULES } from '../../../src/grammar/json-schema/string-schema.js';
import { layoutJson, SchemaUnsupported, schemaGrammar } from '../../../src/grammar/schema-grammar.js';
import { loadXGrammar } from '../../../src/grammar/xgrammar-module.js';
import { openQwen3Grammar, type Qwen3Grammar } from '../../support/qwen3-grammar.js';
import { expectRefused } from '../../support/schema-refusals.js';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

const xgrammar = loadXGrammar();
const ajv = new Ajv2020({ strict: false });
addFormats.default(ajv);

async function accepts(schema: object, instance: Json): Promise<boolean> {
  const grammar = await xgrammar.api.Grammar.fromEBNF(schemaGrammar(schema, { absentAdditionalProperties: 'forbid' }));
  try {
    return await xgrammar.api.Testings.isGrammarAcceptString(grammar, layoutJson(instance));
  } finally {
    grammar.dispose();
  }
}

const CASES: [string, object, Json[], Json[]][] = [
  ['number in [0, 1]', { type: 'number', minimum: 0, maximum: 1 }, [0, 1, 0.5, 0.999, 0.0001], [-0.1, 1.5, 2, -1]],
  ['exclusive bounds', { type: 'number', exclusiveMinimum: -2.5, exclusiveMaximum: 3 }, [-2.4, 0, 2.99, -1], [-2.5, 3, 3.01, -3]],
  ['integer range', { type: 'integer', minimum: -15, maximum: 120 }, [-15, 0, 7, 99, 120], [-16, 121, 1000]],
  ['multipleOf', { type: 'integer', multipleOf: 7 }, [0, 7, 14, 700, -21], [1, 15, 701]],
  ['maxLength', { type: 'string', minLength: 2, maxLength: 4 }, ['ab', 'a\tb', 'abcd', 'é🙂'], ['a', 'abcde', '']],
  ['pattern with lengths', { type: 'string', pattern: '^[a-z]+$', minLength: 2, maxLength: 4 }, ['ab', 'abcd'], ['a', 'abcde', 'AB']],
  ['unanchored pattern', { type: 'string', pattern: 'x[0-9]' }, ['x1', 'ax2b', '"x3"'], ['x', 'y1']],
  ['date-time', { type: 'string', format: 'date-time' }, ['2024-02-29T12:30:00Z', '1999-12-31T23:59:59.5+01:00'], ['2023-02-29T12:30:00Z', '2024-13-01T00:00:00Z', '2024-01-01T00:00:00']],
  ['date', { type: 'string', format: 'date' }, ['2000-02-29', '2024-04-30'], ['1900-02-29', '2024-04-31']],
  ['time', { type: 'string', format: 'time' }, ['23:59:59Z', '01:02:03.25-05:30'], ['24:00:00Z', '12:00']],
  ['duration', { type: 'string', format: 'duration' }, ['P1Y2M3DT4H5M6S', 'PT5M', 'P3W'], ['P', 'PT', '1Y']],
  ['email', { type: 'string', format: 'email' }, ['a.b@example.com'], ['a@', '@b.com', 'a b@c.d']],
  ['hostname', { type: 'string', format: 'hostname' }, ['example.com', 'a-b.c'], ['-a.com', 'a_b.com']],
  ['ipv4', { type: 'string', format: 'ipv4' }, ['192.168.0.1', '255.255.255.255'], ['256.1.1.1', '1.2.3']],
  ['ipv6', { type: 'string', format: 'ipv6' }, ['::1', '2001:db8::8a2e:370:7334', '::ffff:192.0.2.1'], ['1::2::3', '12345::']],
  ['uuid', { type: 'string', format: 'uuid' }, ['123e4567-e89b-12d3-a456-426614174000'], ['123e4567-e89b-12d3-a456-42661417400']],
  // JSONSchemaBench's schemas carry vendor keywords beside enum ("readonly", "weight"): ignored, as ajv ignores them.
  ['unknown keywords beside enum', { enum: ['on', 'off'], readonly: true, weight: 3 }, ['on', 'off'], ['auto']],
  ['non-ASCII enum', { enum: ['naïve', 'ïc', 'emoji 🙂', 3, null, { a: [1] }] }, ['naïve', 'ïc', 'emoji 🙂', 3, null, { a: [1] }], ['naive', 'ic', 4]],
  [
    'prefixItems and counts',
    { type: 'array', prefixItems: [{ type: 'integer' }, { type: 'string' }], items: { type: 'boolean' }, minItems: 1, maxItems: 3 },
    [[1], [1, 'a'], [1, 'a', true]],
    [[], ['a'], [1, 'a', true, false]],
  ],
  [
    'recursion through $defs',
    {
      $defs: { node: { type: 'object', properties: { v: { type: 'integer' }, next: { anyOf: [{ $ref: '#/$defs/node' }, { type: 'null' }] } }, required: ['v', 'next'], additionalProperties: false } },
      $ref: '#/$defs/node',
    },
    [
      { v: 1, next: null },
      { v: 1, next: { v: 2, next: null } },
    ],
    [{ v: 1 }, { v: 'x', next: null }],
  ],
  [
    'additionalProperties schema',
    { type: 'object', properties: { a: { type: 'integer' } }, additionalProperties: { type: 'string' } },
    [{}, { a: 1 }, { a: 1, b: 'x' }, { b: 'x' }],
    [{ a: 'x' }, { a: 1, b: 2 }],
  ],
  ['oneOf over types', { oneOf: [{ type: 'string' }, { type: 'integer', minimum: 0 }] }, ['x', 3], [-1, true]],
  ['allOf merged', { allOf: [{ type: 'object', properties: { a: { type: 'integer' } }, required: ['a'] }, { properties: { b: { type: 'string' } } }] }, [{ a: 1 }, { a: 1, b: 'x' }], [{ b: 'x' }]],
  // A schema of annotations only is any value, as `true` (JSONSchemaBench: {"properties": {}, "additionalProperties": {}} held nested objects).
  ['annotations only: any value', { type: 'object', properties: { a: { description: 'anything' } }, additionalProperties: {} }, [{ a: { k: [1] } }, { a: 'x' }, { b: { c: null } }], []],
  // An unnamed key holds escapes once it differs from every name (JSONSchemaBench: composer's "Vendor\\Namespace\\").
  ['escapes in an unnamed key', { type: 'object', properties: { a: { type: 'integer' } }, additionalProperties: { type: 'string' } }, [{ 'b\\c': 'x' }, { 'ab"': 'y' }, { a: 1 }], [{ a: 'x' }]],
  // A member's additionalProperties: false also refuses the properties only another member names.
  [
    'allOf member additionalProperties',
    { type: 'object', allOf: [{ properties: { a: { type: 'integer' } }, additionalProperties: false }, { properties: { b: { type: 'string' } } }] },
    [{}, { a: 1 }],
    [{ b: 'x' }, { a: 1, b: 'x' }, { c: 1 }],
  ],
  // The outer items hold from the first item on; the member's prefixItems only adds to the first.
  [
    'allOf prefixItems beside items',
    { type: 'array', allOf: [{ prefixItems: [{ type: 'integer', minimum: 3 }] }], items: { type: 'integer', minimum: 5 } },
    [[], [5], [5, 6], [7, 5, 9]],
    [[3, 5], [4], [5, 4]],
  ],
  // A $ref's unevaluatedProperties sees only what the referenced schema evaluates, not its siblings' properties.
  ['$ref beside properties', { $defs: { closed: { unevaluatedProperties: false } }, type: 'object', properties: { a: { type: 'string' } }, $ref: '#/$defs/closed' }, [{}], [{ a: 'x' }, { b: 1 }]],
];

describe('schema grammar', () => {
  it.each(CASES)('%s: valid instances accepted, invalid refused (ajv agrees)', async (_, schema, valid, invalid) => {
    const validate = ajv.compile(schema);
    for (const value of valid) {
      expect(validate(value), `ajv: ${JSON.stringify(value)} valid`).toBe(true);
      expect(await accepts(schema, value), `grammar accepts ${JSON.stringify(value)}`).toBe(true);
    }
    for (const value of invalid) {
      expect(validate(value), `ajv: ${JSON.stringify(value)} invalid`).toBe(false);
      expect(await accepts(schema, value), `grammar refuses ${JSON.stringify(value)}`).toBe(false);
    }
  });

  it('merges an allOf member property named __proto__ as a property, not as a prototype', async () => {
    // ajv skips a property named __proto__, so the grammar's reading is checked against the instances alone.
    const schema = {
      allOf: [{ type: 'object', properties: { a: { type: 'integer' } }, required: ['__proto__'] }, { properties: JSON.parse('{"__proto__": {"type": "integer", "minimum": 2}}') }],
    };
    for (const text of ['{"__proto__": 2}', '{"a": 1, "__proto__": 7}']) expect(await accepts(schema, JSON.parse(text)), text).toBe(true);
    for (const text of ['{"__proto__": 1}', '{"__proto__": "x"}', '{"a": 1}']) expect(await accepts(schema, JSON.parse(text)), text).toBe(false);
  });

  it('a key `required` or a dependency names beside properties that do not: written, with any value, though other unnamed keys are not (forbid)', async () => {
    // JSONSchemaBench's Github_medium o11795 and o13402 require a key their properties omit: with unnamed keys forbidden they allowed no document.
    const schema = { type: 'object', properties: { a: { type: 'integer' } }, required: ['a', 'b'], dependentRequired: { a: ['c'] } };
    for (const value of [
      { a: 1, b: 'x', c: null },
      { a: 1, b: { z: [1] }, c: 2 },
    ]) {
      expect(ajv.validate(schema, value)).toBe(true);
      expect(await accepts(schema, value), JSON.stringify(value)).toBe(true);
    }
    expect(await accepts(schema, { a: 1, b: 2 })).toBe(false);
    // Valid under JSON Schema, but an unnamed key nothing asks for is not generated.
    expect(await accepts(schema, { a: 1, b: 2, c: 3, d: 4 })).toBe(false);
  });

  it('integer bounds past 2^53 (JSON.parse rounds them) are moved inward, never outward', async () => {
    // maximum 9223372036854775807 (int64's) parses as 2^63, whose shortest text is 9223372036854776000.
    const within = async (schema: object, text: string): Promise<boolean> => {
      const grammar = await xgrammar.api.Grammar.fromEBNF(schemaGrammar(schema, { absentAdditionalProperties: 'forbid' }));
      try {
        return await xgrammar.api.Testings.isGrammarAcceptString(grammar, text);
      } finally {
        grammar.dispose();
      }
    };
    // As the server reads it: the schema's text through JSON.parse.
    const int64 = JSON.parse('{"type": "integer", "minimum": -9223372036854775808, "maximum": 9223372036854775807}') as object;
    for (const text of ['0', '9223372036854775000', '-9223372036854775000']) expect(await within(int64, text), text).toBe(true);
    for (const text of ['9223372036854775808', '9223372036854776000', '-9223372036854775809', '-9223372036854776000']) expect(await within(int64, text), text).toBe(false);
  });

  it('a raw control character is never inside a string, bounded or not', async () => {
    for (const schema of [{ type: 'string' }, { type: 'string', maxLength: 5 }, { type: 'string', pattern: '^.*$' }, { type: 'string', pattern: '[^a]' }]) {
      const grammar = await xgrammar.api.Grammar.fromEBNF(schemaGrammar(schema, { absentAdditionalProperties: 'forbid' }));
      expect(await xgrammar.api.Testings.isGrammarAcceptString(grammar, '"a\tb"')).toBe(false);
      expect(await xgrammar.api.Testings.isGrammarAcceptString(grammar, '"a\\tb"')).toBe(true);
      grammar.dispose();
    }
  });

  it.each([
    [{ type: 'object', properties: { a: { not: { pattern: '^x', minLength: 2 } } } }, 'not', '#/properties/a/not'],
    // A listed value would be written without reading the excluded pattern.
    [{ type: 'object', properties: { a: { enum: ['x', 'y'], not: { pattern: '^x' } } } }, 'not', '#/properties/a/not'],
    [{ type: 'string', format: 'iri' }, 'format', '#/format'],
    [{ type: 'string', pattern: '(a)\\1' }, 'pattern', '#/pattern'],
    [{ type: 'array', uniqueItems: true }, 'uniqueItems', '#/uniqueItems'],
    [{ type: 'integer', multipleOf: 7, minimum: 100 }, 'multipleOf', '#/multipleOf'],
    // Two overlapping object branches: the objects both allow cannot be left out by a grammar.
    [
      {
        oneOf: [
          { type: 'object', properties: { a: { type: 'string' } } },
          { type: 'object', properties: { b: { type: 'string' } } },
        ],
      },
      'oneOf',
      '#/oneOf',
    ],
    [{ type: 'object', patternProperties: { '^x': {} }, additionalProperties: true }, 'patternProperties', '#/patternProperties'],
    // One grammar rule per character counted: a huge bound is refused before it is written (1e9 would exhaust the worker's memory).
    [{ type: 'string', maxLength: 1e9 }, 'maxLength', '#/maxLength'],
    [{ type: 'string', minLength: MAX_COUNTED_LENGTH + 1 }, 'minLength', '#/minLength'],
    // Counted strings of different bounds (equal bounds share one set of rules): the ninth passes the rule budget.
    [
      { type: 'object', properties: Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`p${i}`, { type: 'string', maxLength: MAX_COUNTED_LENGTH - i }])) },
      'maxLength',
      `#/properties/p${Math.floor(MAX_COUNTED_RULES / MAX_COUNTED_LENGTH)}/maxLength`,
    ],
  ])('%j is refused naming %s at %s', (schema, keyword, path) => {
    expectRefused(schema, keyword, path);
  });

  it('writes one set of counted rules per bounds, however many strings share them', () => {
    const schema = { type: 'object', properties: Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`p${i}`, { type: 'string', maxLength: MAX_COUNTED_LENGTH }])) };
    const text = schemaGrammar(schema, { absentAdditionalProperties: 'forbid' });
    expect(text.match(/^string_len_0_\d+ ::=/gm)).toHaveLength(1);
  });
});

describe('schemas that expand without end', () => {
  // A reference reached again with other keywords merged in: JSONSchemaBench's Github_easy o17683
  // (allOf of itself and another definition) and JSON Schema Store's resjson (a sibling merged
  // into each anyOf branch, one of them the schema itself). Both overflowed the stack.
  it.each([
    {
      definitions: {
        ChildFoo: { type: 'object' },
        Foo: { type: 'object', required: ['childFoos'], properties: { childFoos: { allOf: [{ $ref: '#/definitions/Foo' }, { $ref: '#/definitions/ChildFoo' }] } } },
      },
      properties: { Foo: { $ref: '#/definitions/Foo' } },
      required: ['Foo'],
    },
    {
      type: 'object',
      additionalProperties: { minProperties: 1, anyOf: [{ type: 'string' }, { $ref: '#/definitions/resource' }] },
      definitions: { resource: { type: 'object', additionalProperties: { minProperties: 1, anyOf: [{ type: 'string' }, { $ref: '#/definitions/resource' }] } } },
    },
  ])('are refused by name, quickly, with a short path: %#', (schema) => {
    const started = performance.now();
    for (const absentAdditionalProperties of ['forbid', 'allow'] as const) {
      try {
        schemaGrammar(schema, { absentAdditionalProperties });
        expect.fail('translated');
      } catch (error) {
        expect(error).toBeInstanceOf(SchemaUnsupported);
        expect((error as SchemaUnsupported).keyword).toBe('$ref');
        expect((error as SchemaUnsupported).reason).toMatch(new RegExp(`more than ${MAX_SCHEMA_DEPTH} deep`));
        expect((error as SchemaUnsupported).path.length).toBeLessThanOrEqual(201);
      }
    }
    expect(performance.now() - started).toBeLessThan(5_000);
  });
});

// xgrammar's string check and its token masks can disagree (an out-of-order negated class passed
// the one and failed the other), so these instances are fed as the server feeds a model's tokens:
// the tiny model's Qwen3 tokenizer, every token checked against the mask first. Valid under ajv
// each (JSONSchemaBench instances the masks refused, reduced).
describe('schema grammar token masks', () => {
  let grammar: Qwen3Grammar;

  beforeAll(async () => {
    grammar = await openQwen3Grammar();
  });
  afterAll(async () => grammar?.engine.dispose());

  const masksAccept = (schema: object, instance: Json): Promise<boolean> => grammar.masksAccept(schema, instance);

  it.each<[string, object, Json[], Json[]]>([
    // Snowplow sp_157: an extra key after named ones (its first letter below a named key's first letter in the class).
    [
      'an unnamed key beside named ones (additionalProperties: true)',
      { type: 'object', properties: { browser: { type: 'string' }, os: { type: 'string' } }, additionalProperties: true },
      [{ browser: 'x', additionalProperty: 'v' }, { q: 1 }, { browserX: true, o: null }],
      [{ browser: 1 }, { os: 2, q: 1 }],
    ],
    [
      'a named key with a non-ASCII first letter beside unnamed ones',
      { type: 'object', properties: { é: { type: 'integer' } }, additionalProperties: { type: 'string' } },
      [{ é: 1 }, { éa: 'x' }, { a: 'x' }],
      [{ é: 'x' }],
    ],
  ])('%s: valid instances pass the masks, invalid ones do not (ajv agrees)', async (_, schema, valid, invalid) => {
    const validate = ajv.compile(schema);
    for (const value of valid) {
      expect(validate(value), `ajv: ${JSON.stringify(value)} valid`).toBe(true);
      expect(await masksAccept(schema, value), `masks accept ${JSON.stringify(value)}`).toBe(true);
    }
    for (const value of invalid) {
      expect(validate(value), `ajv: ${JSON.stringify(value)} invalid`).toBe(false);
      expect(await masksAccept(schema, value), `masks refuse ${JSON.stringify(value)}`).toBe(false);
    }
  });
});
