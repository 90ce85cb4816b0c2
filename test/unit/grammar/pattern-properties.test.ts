// patternProperties and propertyNames through the schema grammar, labelled by ajv: a key a pattern
// matches takes that pattern's schema, a named property whose name a pattern matches meets both
// schemas, no named key is written twice, and propertyNames keeps out the names its pattern does
// not match. What the grammar cannot state exactly is refused naming the keyword.
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { layoutJson, schemaGrammar } from '../../../src/grammar/schema-grammar.js';
import { loadXGrammar } from '../../../src/grammar/xgrammar-module.js';
import { expectRefused } from '../../support/schema-refusals.js';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

const xgrammar = loadXGrammar();
const ajv = new Ajv2020({ strict: false });

async function acceptsText(schema: object, text: string): Promise<boolean> {
  const grammar = await xgrammar.api.Grammar.fromEBNF(schemaGrammar(schema, { absentAdditionalProperties: 'forbid' }));
  try {
    return await xgrammar.api.Testings.isGrammarAcceptString(grammar, text);
  } finally {
    grammar.dispose();
  }
}

const CASES: [string, object, Json[], Json[]][] = [
  [
    // JSON Schema Store's Hugo front matter: any key but the ones it names, by a negative lookahead.
    'keys by a pattern with a lookahead, besides a named property',
    { type: 'object', properties: { date: { type: 'string' } }, patternProperties: { '^(?!aliases|date).+$': { type: 'integer' } }, additionalProperties: false },
    [{}, { date: 'a' }, { x: 1 }, { date: 'a', dat: 2, alias: 3, 'x-date': 4 }],
    [{ date: 1 }, { dates: 1 }, { aliases: 1 }, { x: 'one' }, { '': 1 }],
  ],
  [
    'keys by pattern only',
    { type: 'object', patternProperties: { '^x-': { type: 'integer' } }, additionalProperties: false },
    [{}, { 'x-a': 1 }, { 'x-a': 1, 'x-bc': 2 }, { 'x-': 0 }],
    [{ y: 1 }, { 'x-a': 'one' }, { 'X-a': 1 }],
  ],
  [
    'a named property a pattern matches meets both schemas',
    { type: 'object', properties: { 'x-id': { type: 'integer', minimum: 0 }, name: { type: 'string' } }, patternProperties: { '^x-': { type: 'integer', maximum: 10 } }, additionalProperties: false },
    [{ 'x-id': 5 }, { 'x-id': 0, name: 'a' }, { name: 'a', 'x-q': 10 }, { 'x-id': 10, name: 'b', 'x-i': 3, 'x-idd': 4 }],
    [{ 'x-id': 11 }, { 'x-id': -1 }, { 'x-q': 11 }, { name: 1 }, { other: 1 }],
  ],
  [
    'an unanchored pattern around a named property',
    { type: 'object', properties: { id: { type: 'string' } }, patternProperties: { id: { type: 'string' } }, additionalProperties: false },
    [{ id: 'a' }, { id: 'a', xid: 'b', identity: 'c' }, { idx: 'd' }],
    [{ id: 1 }, { id: 'a', x: 'b' }, { i: 'b' }],
  ],
  [
    'required names only patterns cover',
    { type: 'object', patternProperties: { '^[a-z]+$': { type: 'boolean' } }, required: ['ok'], additionalProperties: false },
    [{ ok: true }, { ok: false, more: true }],
    [{}, { ok: 1 }, { more: true }],
  ],
  [
    'keys with escapes and non-ASCII characters',
    { type: 'object', patternProperties: { '^(a"|é)': { type: 'null' } }, additionalProperties: false },
    [{ 'a"': null }, { 'a"b\n': null }, { é: null, éé: null }],
    [{ a: null }, { 'b"': null }, { é: 1 }],
  ],
  [
    'a pattern whose schema is false keeps out the named properties it matches',
    { type: 'object', properties: { 'x-a': { type: 'integer' }, b: { type: 'integer' } }, patternProperties: { '^x-': false }, additionalProperties: false },
    [{}, { b: 1 }],
    [{ 'x-a': 1 }, { b: 1, 'x-c': 2 }],
  ],
  [
    // WashingtonPost's ANS schemas: `.*` and a start-anchored `^[a-zA-Z0-9_]*` match every key (their language is written as any string, once).
    'patterns matching every key, beside named properties',
    { type: 'object', properties: { ab: { type: 'integer', minimum: 0 }, ac: { type: 'integer', maximum: 0 } }, patternProperties: { '^[a-z_]*': { type: 'integer' } }, additionalProperties: false },
    [{}, { ab: 1 }, { a: 1, abc: -2, 'A\nb': 3, '': 4, 'a"c': 5, é: 6 }, { ab: 1, ac: -1, b: 7 }],
    [{ ab: -1 }, { ac: 2 }, { a: 'x' }, { é: 'x' }],
  ],
  [
    'a pattern a key only contains, beside a named property',
    { type: 'object', properties: { ab: { type: 'null' } }, patternProperties: { b: { type: ['integer', 'null'] } }, additionalProperties: false },
    [{ ab: null }, { b: 1, bb: 2, xbx: null, 'a\nb': 4 }, { ab: null, abc: 5 }],
    [{ a: 1 }, { ab: 1 }, { x: 1 }, { bb: 'x' }],
  ],
  [
    'propertyNames as a pattern, other keys by additionalProperties',
    { type: 'object', propertyNames: { pattern: '^[a-z]+$' }, additionalProperties: { type: 'integer' } },
    [{}, { a: 1, bc: 2 }],
    [{ A: 1 }, { a1: 1 }, { a: 'x' }],
  ],
  [
    'propertyNames as a list of names (through a $ref), values by patternProperties',
    {
      type: 'object',
      $defs: { pipette: { enum: ['p10', 'p300', 'other"one'] } },
      properties: { p10: { type: 'number', minimum: 1 } },
      propertyNames: { $ref: '#/$defs/pipette' },
      patternProperties: { '.*': { type: 'number' } },
      additionalProperties: false,
    },
    [{}, { p10: 2 }, { p10: 2, p300: 0.5 }, { 'other"one': 1 }],
    [{ p10: 0 }, { p20: 1 }, { p300: 'x' }],
  ],
  [
    'propertyNames as a const, other keys by additionalProperties',
    { type: 'object', propertyNames: { const: 'only' }, additionalProperties: { type: 'string' } },
    [{}, { only: 'x' }],
    [{ other: 'x' }, { only: 1 }],
  ],
  [
    'propertyNames of type string says nothing more',
    { type: 'object', properties: { a: { type: 'integer' } }, propertyNames: { type: 'string' }, additionalProperties: { type: 'boolean' } },
    [{ a: 1 }, { a: 1, b: true }],
    [{ a: 'x' }, { b: 1 }],
  ],
  [
    'propertyNames keeps out a named property',
    { type: 'object', properties: { Name: { type: 'string' }, ok: { type: 'integer' } }, propertyNames: { type: 'string', pattern: '^[a-z]+$' }, additionalProperties: { type: 'boolean' } },
    [{ ok: 1 }, { ok: 1, z: true }, { zz: false }],
    [{ Name: 'x' }, { ok: 1, Z: true }, { ok: 1, z: 1 }],
  ],
];

describe('patternProperties and propertyNames', () => {
  it.each(CASES)('%s: valid instances accepted, invalid refused (ajv agrees)', async (_, schema, valid, invalid) => {
    const validate = ajv.compile(schema);
    for (const value of valid) {
      expect(validate(value), `ajv: ${JSON.stringify(value)} valid`).toBe(true);
      expect(await acceptsText(schema, layoutJson(value)), `grammar accepts ${JSON.stringify(value)}`).toBe(true);
    }
    for (const value of invalid) {
      expect(validate(value), `ajv: ${JSON.stringify(value)} invalid`).toBe(false);
      expect(await acceptsText(schema, layoutJson(value)), `grammar refuses ${JSON.stringify(value)}`).toBe(false);
    }
  });

  it('never writes a named key a second time as a pattern key', async () => {
    const schema = { type: 'object', properties: { 'x-id': { type: 'integer' } }, patternProperties: { '^x-': { type: 'integer' } }, additionalProperties: false };
    expect(await acceptsText(schema, '{"x-id": 1, "x-idx": 2}')).toBe(true);
    expect(await acceptsText(schema, '{"x-id": 1, "x-id": 2}')).toBe(false);
    expect(await acceptsText(schema, '{"x-a": 1, "x-a": 2}')).toBe(true);
  });

  it.each([
    [{ type: 'object', patternProperties: { '^x': {} } }, 'patternProperties', '#/patternProperties'],
    [{ type: 'object', patternProperties: { '^x': {} }, additionalProperties: true }, 'patternProperties', '#/patternProperties'],
    [{ type: 'object', patternProperties: { '^x': { type: 'integer' }, '^y': { type: 'string' } }, additionalProperties: false }, 'patternProperties', '#/patternProperties'],
    [{ type: 'object', patternProperties: { '(a)\\1': {} }, additionalProperties: false }, 'patternProperties', '#/patternProperties/(a)\\1'],
    [{ type: 'object', propertyNames: { maxLength: 3 } }, 'propertyNames', '#/propertyNames'],
    [{ type: 'object', propertyNames: { pattern: '^a' }, patternProperties: { '^a': {} }, additionalProperties: false }, 'propertyNames', '#/propertyNames'],
  ])('%j is refused naming %s at %s', (schema, keyword, path) => {
    expectRefused(schema, keyword, path, 'allow');
  });
});
