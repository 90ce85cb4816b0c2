// Presence constraints in the schema → grammar translation (presence-constraints.ts, walked by
// object-schema.ts): dependencies, dependentRequired, dependentSchemas, oneOf / anyOf / not over
// `required`, min/maxProperties, and oneOf over objects one of which cannot have a key the other
// requires. Each instance's verdict is ajv's; the grammar (xgrammar's own matcher) must agree,
// with the instance written in the grammar's layout and its keys in the schema's order.
import { Ajv } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { MAX_MEMBER_RULES, MAX_SCHEMA_DEPENDENCIES } from '../../../src/grammar/json-schema/presence-constraints.js';
import { layoutJson, type SchemaGrammarOptions, type SchemaUnsupported, schemaGrammar } from '../../../src/grammar/schema-grammar.js';
import { loadXGrammar } from '../../../src/grammar/xgrammar-module.js';
import { expectGrammarAgreesWithAjv, expectRefused } from '../../support/schema-refusals.js';

type Json = Parameters<typeof layoutJson>[0];
type Mode = SchemaGrammarOptions['absentAdditionalProperties'];

const xgrammar = loadXGrammar();
const ajv2020 = new Ajv2020({ strict: false });
// draft 4–7's `dependencies` is a draft-07 keyword: Ajv2020 does not know it.
const ajv7 = new Ajv({ strict: false });

async function grammarFor(schema: object, mode: Mode): Promise<(instance: Json) => Promise<boolean>> {
  const grammar = await xgrammar.api.Grammar.fromEBNF(schemaGrammar(schema, { absentAdditionalProperties: mode }));
  return (instance) => xgrammar.api.Testings.isGrammarAcceptString(grammar, layoutJson(instance));
}

/** [name, schema, absent additionalProperties read as, valid instances, invalid instances]. */
const CASES: [string, object, Mode, Json[], Json[]][] = [
  [
    'dependentRequired',
    { type: 'object', properties: { vendor: { type: 'string' }, model: { type: 'string' }, year: { type: 'integer' } }, dependentRequired: { vendor: ['model'] } },
    'forbid',
    [{}, { model: 'x' }, { vendor: 'v', model: 'x' }, { vendor: 'v', model: 'x', year: 1 }, { year: 2 }],
    [{ vendor: 'v' }, { vendor: 'v', year: 1 }],
  ],
  [
    'dependencies as lists, a chain',
    { $schema: 'http://json-schema.org/draft-07/schema#', type: 'object', properties: { a: {}, b: {}, c: {} }, dependencies: { a: ['b'], b: ['c'] } },
    'forbid',
    [{}, { c: 1 }, { b: 1, c: 1 }, { a: 1, b: 1, c: 1 }],
    [{ a: 1 }, { a: 1, b: 1 }, { b: 1 }, { a: 1, c: 1 }],
  ],
  [
    'dependencies that only require (the dependent key after its dependency)',
    { $schema: 'http://json-schema.org/draft-07/schema#', type: 'object', properties: { pageId: {}, siteId: {} }, dependencies: { siteId: { required: ['pageId'] } } },
    'forbid',
    [{}, { pageId: 1 }, { pageId: 1, siteId: 2 }],
    [{ siteId: 2 }],
  ],
  [
    'oneOf over required: exactly one of the key sets',
    {
      type: 'object',
      properties: { ssn: { type: 'string' }, ein: { type: 'string' }, itin: { type: 'string' }, name: { type: 'string' } },
      oneOf: [{ required: ['ssn'] }, { required: ['ein'] }, { required: ['itin'] }],
    },
    'forbid',
    [{ ssn: 'a' }, { ein: 'b', name: 'n' }, { itin: 'c' }],
    [{}, { name: 'n' }, { ssn: 'a', ein: 'b' }, { ssn: 'a', ein: 'b', itin: 'c' }],
  ],
  [
    'oneOf over sets of more than one key',
    { type: 'object', properties: { placementId: {}, publisherId: {}, placementKey: {} }, oneOf: [{ required: ['placementId'] }, { required: ['publisherId', 'placementKey'] }] },
    'forbid',
    [{ placementId: 1 }, { publisherId: 1, placementKey: 2 }, { placementId: 1, publisherId: 1 }],
    [{}, { publisherId: 1 }, { placementId: 1, publisherId: 1, placementKey: 2 }],
  ],
  [
    'anyOf over required',
    { type: 'object', properties: { a: {}, b: {}, c: {} }, anyOf: [{ required: ['a'] }, { required: ['b'] }] },
    'forbid',
    [{ a: 1 }, { b: 1 }, { a: 1, b: 1 }, { a: 1, c: 1 }],
    [{}, { c: 1 }],
  ],
  [
    'not over allOf of required: never both',
    { type: 'object', properties: { cmd: {}, args: {}, env: {} }, not: { allOf: [{ required: ['cmd'] }, { required: ['args'] }] } },
    'forbid',
    [{}, { cmd: 1 }, { args: 1, env: 1 }],
    [
      { cmd: 1, args: 1 },
      { cmd: 1, args: 1, env: 1 },
    ],
  ],
  ['not required, no type: non-objects meet required, so not excludes them', { properties: { a: {}, b: {} }, not: { required: ['a'] } }, 'forbid', [{}, { b: 1 }], [{ a: 1 }, 3, 'x', null]],
  [
    'minProperties beyond the required ones, with unnamed keys',
    { type: 'object', properties: { a: {}, b: {} }, minProperties: 2, additionalProperties: { type: 'integer' } },
    'forbid',
    [
      { a: 1, b: 1 },
      { a: 1, x: 2 },
      { x: 1, y: 2 },
      { a: 1, b: 2, x: 3 },
    ],
    [{}, { a: 1 }, { x: 1 }, { x: 'no', y: 1 }],
  ],
  [
    'maxProperties with unnamed keys',
    { type: 'object', properties: { a: {}, b: {} }, required: ['a'], maxProperties: 2, additionalProperties: true },
    'forbid',
    [{ a: 1 }, { a: 1, b: 1 }, { a: 1, x: 1 }],
    [{}, { a: 1, b: 1, x: 1 }, { a: 1, x: 1, y: 2 }],
  ],
  [
    'min and max together, absent additionalProperties read as allowed',
    { type: 'object', properties: { a: {}, b: {}, c: {} }, minProperties: 1, maxProperties: 2 },
    'allow',
    [{ a: 1 }, { b: 1, c: 1 }, { z: 1 }, { a: 1, z: 1 }],
    [{}, { a: 1, b: 1, c: 1 }, { a: 1, y: 1, z: 1 }],
  ],
  [
    'keys a constraint names but properties do not: slots of their own, never spelled as unnamed keys',
    { type: 'object', properties: { a: {} }, dependentRequired: { a: ['b'] }, additionalProperties: { type: 'integer' } },
    'forbid',
    [{}, { a: 'x', b: 1 }, { b: 2 }, { c: 3 }, { a: 1, b: 2, c: 3 }],
    [{ a: 1 }, { a: 1, c: 3 }, { a: 1, b: 'x' }],
  ],
  [
    'a property whose schema is false beside unnamed keys: no unnamed key spells it',
    { type: 'object', properties: { a: false, b: { type: 'integer' } }, additionalProperties: true },
    'forbid',
    [{}, { b: 1 }, { ab: 1 }, { c: null }],
    [{ a: 1 }, { a: null, b: 1 }],
  ],
  [
    'dependentSchemas that say more than required: split on the key',
    {
      type: 'object',
      properties: { a: { type: 'string' }, b: { type: 'integer' } },
      dependentSchemas: { a: { properties: { b: { minimum: 5 } }, required: ['b'] } },
    },
    'forbid',
    [{}, { b: 1 }, { a: 'x', b: 5 }, { a: 'x', b: 9 }],
    [{ a: 'x' }, { a: 'x', b: 4 }],
  ],
  [
    'dependentSchemas false: the key never appears; non-objects are not constrained',
    { dependentSchemas: { a: false }, properties: { a: {}, b: {} }, type: ['object', 'string'] },
    'forbid',
    [{}, { b: 1 }, 'x'],
    [{ a: 1 }, { a: 1, b: 1 }],
  ],
  [
    'oneOf over objects, one requiring a key the other cannot have',
    {
      $defs: {
        custom: { type: 'object', properties: { mode: { enum: ['custom'] }, name: { type: 'string' } }, additionalProperties: false },
        reference: { type: 'object', properties: { mode: { enum: ['reference'] }, reference_id: { type: 'string' } }, required: ['reference_id'], additionalProperties: false },
      },
      oneOf: [{ $ref: '#/$defs/custom' }, { $ref: '#/$defs/reference' }],
    },
    'forbid',
    [{}, { name: 'n' }, { mode: 'custom', name: 'n' }, { reference_id: 'r' }, { mode: 'reference', reference_id: 'r' }],
    [{ mode: 'reference' }, { name: 'n', reference_id: 'r' }, { mode: 'custom', reference_id: 'r' }],
  ],
  [
    'oneOf over objects each requiring a key the other does not name (strict reading: the grammar never writes it)',
    {
      oneOf: [
        { type: 'object', required: ['delete'], properties: { delete: { type: 'integer' } } },
        { type: 'object', required: ['insert'], properties: { insert: { type: 'string' } } },
      ],
    },
    'forbid',
    [{ delete: 1 }, { insert: 'x' }],
    [{}, { delete: 'x' }, { delete: 1, insert: 'x' }],
  ],
  [
    'oneOf told apart by a required property whose constants come from the branch and its siblings (allOf)',
    {
      type: 'object',
      properties: { grantType: { type: 'string' }, scope: { type: 'string' } },
      required: ['grantType'],
      oneOf: [{ properties: { grantType: { enum: ['authorization_code', 'implicit'] } } }, { properties: { grantType: { enum: ['client_credentials'] } } }],
    },
    'forbid',
    [{ grantType: 'implicit' }, { grantType: 'client_credentials', scope: 's' }],
    [{ grantType: 'password' }, { scope: 's' }],
  ],
  [
    'oneOf over closed objects that share only the empty object: {} matches both, so neither writes it',
    {
      $defs: {
        first: { type: 'object', properties: { discriminator: { const: 'first' }, first: { type: 'boolean' } }, additionalProperties: false },
        second: { type: 'object', properties: { discriminator: { const: 'second' }, second: { type: 'boolean' } }, additionalProperties: false },
      },
      oneOf: [{ $ref: '#/$defs/first' }, { $ref: '#/$defs/second' }, { type: 'string' }],
    },
    'forbid',
    [{ discriminator: 'first' }, { first: true }, { discriminator: 'second', second: false }, 'x'],
    [{}, { first: true, second: true }, { discriminator: 'first', second: true }],
  ],
  [
    'allOf with oneOf in two members: exactly one of each, as the pairs',
    {
      type: 'object',
      properties: { a: {}, b: {}, c: {}, d: {} },
      allOf: [{ oneOf: [{ required: ['a'] }, { required: ['b'] }] }, { oneOf: [{ required: ['c'] }, { required: ['d'] }] }],
    },
    'forbid',
    [
      { a: 1, c: 1 },
      { b: 1, d: 1 },
      { a: 1, d: 1 },
    ],
    [{ a: 1 }, { a: 1, b: 1, c: 1 }, { a: 1, c: 1, d: 1 }, {}],
  ],
  [
    'allOf with anyOf in two members and keywords no validator knows set differently',
    {
      allOf: [
        { 'x-doc': 'one', anyOf: [{ type: 'integer', minimum: 5 }, { type: 'string' }] },
        { 'x-doc': 'two', anyOf: [{ type: 'integer', maximum: 7 }, { type: 'null' }] },
      ],
    },
    'forbid',
    [5, 6, 7],
    [4, 8, 'x', null],
  ],
  ['not over types: the other types', { not: { type: ['array', 'object', 'null'] } }, 'forbid', ['x', 3, 1.5, true], [[], {}, null]],
  ['not integer beside integer and string', { type: ['integer', 'string'], not: { type: 'integer' } }, 'forbid', ['x'], [3, 1.5]],
  ['allOf with two enums: the values in both', { allOf: [{ enum: ['a', 'b', 'c'] }, { enum: ['b', 'c', 'd'] }] }, 'forbid', ['b', 'c'], ['a', 'd']],
];

describe('presence constraints', () => {
  it.each(CASES)('%s: valid instances accepted, invalid refused (ajv agrees)', async (_, schema, mode, valid, invalid) => {
    const validate = ('$schema' in schema ? ajv7 : ajv2020).compile(schema);
    const accepts = await grammarFor(schema, mode);
    await expectGrammarAgreesWithAjv(validate, accepts, valid, invalid);
  });

  // Random statements over four named keys and unnamed ones (additionalProperties: true under
  // 'forbid' or absent under 'allow'): for every subset of the named keys, with and without two
  // unnamed keys, the grammar says what ajv says.
  it('random presence constraints: the grammar agrees with ajv on every set of keys', async () => {
    let seed = 37;
    const random = (n: number): number => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed % n;
    };
    const KEYS = ['a', 'b', 'c', 'd'];
    const someKeys = (): string[] => KEYS.filter(() => random(3) === 0).concat(KEYS[random(4)]!);
    const statement = (depth: number): object => {
      const pick = depth === 0 ? 0 : random(5);
      if (pick === 0) return { required: [...new Set(someKeys())] };
      const branches = Array.from({ length: 2 + random(2) }, () => statement(depth - 1));
      return pick === 1 ? { anyOf: branches } : pick === 2 ? { oneOf: branches } : pick === 3 ? { allOf: branches } : { not: branches[0] };
    };
    const instances: Record<string, number>[] = [];
    for (let mask = 0; mask < 16; mask++)
      for (const unnamed of [{}, { y: 1, z: 2 }] as Record<string, number>[]) instances.push({ ...Object.fromEntries(KEYS.filter((_, i) => mask & (1 << i)).map((k) => [k, 1])), ...unnamed });
    let checked = 0;
    for (let round = 0; round < 30; round++) {
      const schema: Record<string, unknown> = { type: 'object', properties: Object.fromEntries(KEYS.map((k) => [k, { type: 'integer' }])) };
      if (random(2) === 0) schema['dependentRequired'] = { [KEYS[random(4)]!]: [...new Set(someKeys())] };
      const combinator = statement(2) as Record<string, unknown>;
      for (const keyword of ['anyOf', 'oneOf', 'not']) if (combinator[keyword] !== undefined) schema[keyword] = combinator[keyword];
      if (random(3) === 0) schema['minProperties'] = random(4);
      if (random(3) === 0) schema['maxProperties'] = 1 + random(5);
      const mode: Mode = random(2) === 0 ? 'allow' : 'forbid';
      if (mode === 'forbid') schema['additionalProperties'] = true;
      const validate = ajv2020.compile(schema);
      const expected = instances.map((instance) => validate(instance) === true);
      let accepts: ((instance: Json) => Promise<boolean>) | null = null;
      try {
        accepts = await grammarFor(schema, mode);
      } catch (error) {
        // The only refusal here: a schema that allows no value at all.
        expect((error as SchemaUnsupported).keyword, JSON.stringify(schema)).toBe('schema');
        expect(expected.some(Boolean), `${JSON.stringify(schema)} allows no instance`).toBe(false);
        continue;
      }
      for (const [i, instance] of instances.entries()) {
        expect(await accepts(instance), `${JSON.stringify(schema)} on ${JSON.stringify(instance)}`).toBe(expected[i]);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(500);
  });

  it.each([
    [
      'more states than the walk may write',
      {
        type: 'object',
        properties: Object.fromEntries([...Array.from({ length: 13 }, (_, i) => [`a${i}`, {}]), ...Array.from({ length: 13 }, (_, i) => [`b${i}`, {}])]),
        dependentRequired: Object.fromEntries(Array.from({ length: 13 }, (_, i) => [`a${i}`, [`b${i}`]])),
      },
      'dependentRequired',
      '#/dependentRequired',
    ],
    [
      'too many dependent subschemas to split on',
      {
        type: 'object',
        dependentSchemas: Object.fromEntries(Array.from({ length: MAX_SCHEMA_DEPENDENCIES + 1 }, (_, i) => [`k${i}`, { properties: { v: { minimum: i } } }])),
      },
      'dependentSchemas',
      `#/dependentSchemas/k${MAX_SCHEMA_DEPENDENCIES}`,
    ],
    ['not over more than keys', { type: 'object', not: { properties: { a: { type: 'string' } } } }, 'not', '#/not'],
    ['not integer beside number (the numbers that are not whole)', { type: 'number', not: { type: 'integer' } }, 'not', '#/not'],
    ['dependentRequired that is not a list of names', { type: 'object', dependentRequired: { a: 'b' } }, 'dependentRequired', '#/dependentRequired'],
  ])('%s is refused naming %s', (_, schema, keyword, path) => {
    expect(MAX_MEMBER_RULES).toBeLessThan(2 ** 13);
    expectRefused(schema, keyword, path);
  });

  it('names propertyNames lists are slots: none written twice, each counted once', async () => {
    const schema = { type: 'object', propertyNames: { enum: ['x', 'y'] }, additionalProperties: { type: 'integer' }, minProperties: 2 };
    const grammar = await xgrammar.api.Grammar.fromEBNF(schemaGrammar(schema, { absentAdditionalProperties: 'forbid' }));
    expect(await xgrammar.api.Testings.isGrammarAcceptString(grammar, '{"x": 1, "y": 2}')).toBe(true);
    expect(await xgrammar.api.Testings.isGrammarAcceptString(grammar, '{"x": 1, "x": 2}')).toBe(false);
    expect(await xgrammar.api.Testings.isGrammarAcceptString(grammar, '{"x": 1}')).toBe(false);
  });

  // Where unnamed keys are allowed, {"delete": 1, "insert": "x"} matches both branches: the
  // grammar would write it from either, so the oneOf is refused.
  it('oneOf over objects that may share a value is refused where unnamed keys are allowed', () => {
    const schema = {
      oneOf: [
        { type: 'object', required: ['delete'] },
        { type: 'object', required: ['insert'], properties: { insert: {} } },
      ],
    };
    expect(ajv2020.validate(schema, { delete: 1, insert: 'x' })).toBe(false);
    expect(() => schemaGrammar(schema, { absentAdditionalProperties: 'allow' })).toThrow(expect.objectContaining({ keyword: 'oneOf', path: '#/oneOf' }));
  });
});
