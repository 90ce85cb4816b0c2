// Formats, uniqueItems, numeric oneOf and multipleOf (issue 37), each translated exactly or refused
// by name: instances ajv (with ajv-formats, full mode) calls valid are accepted by the grammar in
// its layout, instances it calls invalid are refused; random strings the base64 grammar accepts are
// ones ajv-formats' "byte" accepts.
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { layoutJson, SchemaUnsupported, schemaGrammar } from '../../../src/grammar/schema-grammar.js';
import { loadXGrammar } from '../../../src/grammar/xgrammar-module.js';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

const xgrammar = loadXGrammar();
// Unknown formats are annotations (strict: false makes ajv ignore them, as the drafts say), and its log stays quiet about them.
const ajv = new Ajv2020({ strict: false, logger: false });
addFormats.default(ajv);

async function withGrammar<T>(schema: object, use: (accepts: (text: string) => Promise<boolean>) => Promise<T>): Promise<T> {
  const grammar = await xgrammar.api.Grammar.fromEBNF(schemaGrammar(schema, { absentAdditionalProperties: 'forbid' }));
  try {
    return await use((text) => xgrammar.api.Testings.isGrammarAcceptString(grammar, text));
  } finally {
    grammar.dispose();
  }
}

const CASES: [string, object, Json[], Json[]][] = [
  // Formats no validator knows are annotations: any string, with the string's other keywords.
  ['unknown format', { type: 'string', format: 'topic' }, ['', 'a/b', 'x y "z"'], [1, null]],
  ['unknown format alone: any value', { format: 'expose' }, ['80:80', 3, null, { a: [true] }], []],
  ['unknown format with lengths', { type: 'string', format: 'path', minLength: 1, maxLength: 3 }, ['a', '/b/'], ['', 'abcd']],
  ['unknown format beside pattern', { type: 'string', format: 'semver', pattern: '^[0-9]+\\.[0-9]+$' }, ['1.2', '10.0'], ['1', 'a.b']],
  ['password (always valid in ajv-formats)', { type: 'string', format: 'password' }, ['', 'hunter2'], [3]],
  ['int32 on a string is an annotation', { type: 'string', format: 'int32' }, ['abc', '99999999999'], [5]],
  ['int32 on an integer', { type: 'integer', format: 'int32' }, [0, -2147483648, 2147483647], [2147483648, -2147483649, 1.5]],
  ['int64 on a number', { type: 'number', format: 'int64' }, [0, -5, 9007199254740991], [1.5, -0.25]],
  ['float on a number', { type: 'number', format: 'float' }, [0, 1.5, -2e-7], ['x']],
  ['byte', { type: 'string', format: 'byte' }, ['', 'YQ==', 'YWI=', 'YWJj', 'Y2E+/w=='], ['Y', 'YQ', 'YQ=', 'YWJjZ', 'Y Q==', 'YQ==YQ==']],
  // uniqueItems over small finite sets of values: the grammar offers only the values not yet used.
  [
    'uniqueItems over an enum',
    { type: 'array', items: { enum: ['GET', 'POST', 'PUT'] }, uniqueItems: true },
    [[], ['GET'], ['PUT', 'GET'], ['POST', 'GET', 'PUT']],
    [['GET', 'GET'], ['PUT', 'GET', 'PUT'], ['HEAD']],
  ],
  [
    'uniqueItems with counts',
    { type: 'array', items: { enum: [1, 2, 3, 4] }, uniqueItems: true, minItems: 2, maxItems: 3 },
    [
      [1, 2],
      [4, 3, 1],
    ],
    [[1], [1, 1], [1, 2, 3, 4], []],
  ],
  [
    'uniqueItems too few values for minItems',
    { type: 'array', items: { type: 'boolean' }, uniqueItems: true, minItems: 2 },
    [
      [true, false],
      [false, true],
    ],
    [[true], [true, true], [true, false, true]],
  ],
  // JSON Schema compares objects whatever their key order: an enum holding both orders offers them as one value.
  [
    'uniqueItems over objects equal in any key order',
    { type: 'array', items: { enum: [{ a: 1, b: 2 }, { b: 2, a: 1 }, 1, true] }, uniqueItems: true },
    [
      [{ a: 1, b: 2 }, 1, true],
      [{ b: 2, a: 1 }, true],
    ],
    [
      [
        { a: 1, b: 2 },
        { b: 2, a: 1 },
      ],
      [1, true, 1],
    ],
  ],
  [
    'uniqueItems over prefixItems and items',
    { type: 'array', prefixItems: [{ type: 'boolean' }, { const: 'x' }], items: { enum: ['x', 'y', false] }, uniqueItems: true },
    [[true], [false, 'x'], [true, 'x', 'y', false]],
    [[true, 'x', 'x'], [false, 'x', false], ['x']],
  ],
];

describe('schema grammar, exact readings', () => {
  it.each(CASES)('%s: valid instances accepted, invalid refused (ajv agrees)', async (_, schema, valid, invalid) => {
    const validate = ajv.compile(schema);
    await withGrammar(schema, async (accepts) => {
      for (const value of valid) {
        expect(validate(value), `ajv: ${JSON.stringify(value)} valid`).toBe(true);
        expect(await accepts(layoutJson(value)), `grammar accepts ${JSON.stringify(value)}`).toBe(true);
      }
      for (const value of invalid) {
        expect(validate(value), `ajv: ${JSON.stringify(value)} invalid`).toBe(false);
        expect(await accepts(layoutJson(value)), `grammar refuses ${JSON.stringify(value)}`).toBe(false);
      }
    });
  });

  it.each([
    [{ type: 'string', format: 'regex' }, 'format', '#/format'],
    [{ type: 'string', format: 'url' }, 'format', '#/format'],
    [{ type: 'string', format: 'json-pointer' }, 'format', '#/format'],
    [{ type: 'string', format: 'idn-hostname' }, 'format', '#/format'],
    [{ type: 'array', items: { type: 'string' }, uniqueItems: true }, 'uniqueItems', '#/uniqueItems'],
    [{ type: 'array', prefixItems: [{ enum: [1, 2] }], uniqueItems: true }, 'uniqueItems', '#/uniqueItems'],
    [{ type: 'array', items: { enum: Array.from({ length: 11 }, (_, i) => i) }, uniqueItems: true }, 'uniqueItems', '#/uniqueItems'],
  ])('%j is refused naming %s at %s', (schema, keyword, path) => {
    try {
      schemaGrammar(schema, { absentAdditionalProperties: 'forbid' });
      expect.fail('translated');
    } catch (error) {
      expect(error).toBeInstanceOf(SchemaUnsupported);
      expect((error as SchemaUnsupported).keyword).toBe(keyword);
      expect((error as SchemaUnsupported).path).toBe(path);
    }
  });
});

/** Strings over base64's alphabet, padding and a few characters outside it, from a fixed seed. */
function randomBase64ish(count: number): string[] {
  const pieces = ['A', 'z', '0', '9', '+', '/', '=', '==', 'YQ', 'YWJj', ' ', '-', '_', '\n'];
  let seed = 41;
  const next = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return Math.floor((seed / 2147483648) * n);
  };
  return Array.from({ length: count }, () => {
    let s = '';
    for (let i = next(9); i > 0; i--) s += pieces[next(pieces.length)]!;
    return s;
  });
}

// ajv-formats tests its byte pattern in multiline mode, so it also passes any string with a line
// break and one base64 line ("!\n"); the grammar writes base64 lines alone, on one line.
it('format byte accepts exactly the random one-line strings ajv-formats accepts, and no string it refuses', async () => {
  const schema = { type: 'string', format: 'byte' };
  const validate = ajv.compile(schema);
  let valid = 0;
  await withGrammar(schema, async (accepts) => {
    for (const value of randomBase64ish(300)) {
      const byAjv = validate(value) === true;
      const accepted = await accepts(layoutJson(value));
      if (accepted) expect(byAjv, `ajv accepts ${JSON.stringify(value)}, which the grammar accepts`).toBe(true);
      if (value.includes('\n')) continue;
      if (byAjv) valid++;
      expect(accepted, `grammar and ajv agree on ${JSON.stringify(value)}`).toBe(byAjv);
    }
  });
  // The sample reaches both sides, so the check has teeth.
  expect(valid).toBeGreaterThan(20);
});
