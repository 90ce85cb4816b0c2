// Formats, uniqueItems, numeric and string oneOf and multipleOf (issue 37), each translated exactly or refused
// by name: instances ajv (with ajv-formats, full mode) calls valid are accepted by the grammar in
// its layout, instances it calls invalid are refused; random strings the base64 grammar accepts are
// ones ajv-formats' "byte" accepts.
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { regexSpecGrammar } from '../../../src/grammar/regex-ebnf.js';
import { layoutJson, schemaGrammar } from '../../../src/grammar/schema-grammar.js';
import { loadXGrammar } from '../../../src/grammar/xgrammar-module.js';
import { expectRefused } from '../../support/schema-refusals.js';

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
  // A listed value must meet the string and number keywords beside the list (JSONSchemaBench's o48280, o70256).
  ['enum beside lengths', { enum: ['a', 'bb', 'ccc', 'é🙂', 7], minLength: 2, maxLength: 2 }, ['bb', 'é🙂', 7], ['a', 'ccc']],
  ['enum beside number bounds', { enum: [0, 1, 5, 10, 11, 'x'], minimum: 1, maximum: 10 }, [1, 5, 10, 'x'], [0, 11]],
  ['enum beside exclusive bounds and a pattern', { enum: [1, 2, 3, 'ab', 'b'], exclusiveMaximum: 3, pattern: '^a' }, [1, 2, 'ab'], [3, 'b']],
  // Lengths a pattern's items cannot carry: the automaton of the pattern and the lengths (o13020's currency, o69966's uri).
  ['an unanchored pattern of exactly its length', { type: 'string', pattern: '[a-zA-Z]{3}', minLength: 3, maxLength: 3 }, ['abc', 'XyZ'], ['ab', 'abcd', 'ab1', '1ab']],
  ['an unanchored pattern inside a longer bound', { type: 'string', pattern: '[0-9]{2}', maxLength: 4 }, ['12', 'a12', 'x12y'], ['1', 'a1b2', '12345', 'ab']],
  ['a format with a short minLength', { type: 'string', format: 'uri', minLength: 7 }, ['http://a', 'https://example.org/x'], ['http:', 'a:b', 'not a uri']],
  // `not: {pattern}`: a string the pattern does not match (JSONSchemaBench's officer names: not only punctuation and spaces).
  ['a string not all punctuation and spaces', { type: 'string', minLength: 1, not: { pattern: '^[.,*\\s(){}-]+$' } }, ['a', 'Ann', ' a ', '-x-', 'é'], ['', ' ', '...', '-', '(\u00a0)', '\u3000', 1]],
  ['not a pattern, beside type string in the negation', { type: 'string', not: { type: 'string', pattern: 'x' } }, ['', 'abc'], ['x', 'axb', null]],
  ['a property whose const fails its maxLength', { type: 'object', properties: { a: { const: 'long', maxLength: 2 } } }, [{}], [{ a: 'long' }, { a: 'lo' }]],
  // Formats no validator knows are annotations: any string, with the string's other keywords.
  ['unknown format', { type: 'string', format: 'topic' }, ['', 'a/b', 'x y "z"'], [1, null]],
  // `.` is every character but line terminators: parentheses included (a class excluding U+2028 once excluded `(`, as xgrammar reads it).
  ['a dot takes parentheses', { type: 'string', pattern: '^a.+$' }, ['a(b)', 'a)', 'a((', 'a\u00e9'], ['a', 'b(', 'a\n']],
  // ... and every character beyond ASCII but the two line separators ECMAScript's `.` leaves out.
  ['a dot refuses U+2028 / U+2029 only', { type: 'string', pattern: '^.+$' }, ['\u2027', '\u202a', '\u2000x', 'é\u{1F600}', '\u00a0\uffff'], ['\u2028', 'a\u2029', 'x\u2028y', '\r']],
  ['unknown format alone: any value', { format: 'expose' }, ['80:80', 3, null, { a: [true] }], []],
  ['unknown format with lengths', { type: 'string', format: 'path', minLength: 1, maxLength: 3 }, ['a', '/b/'], ['', 'abcd']],
  ['unknown format beside pattern', { type: 'string', format: 'semver', pattern: '^[0-9]+\\.[0-9]+$' }, ['1.2', '10.0'], ['1', 'a.b']],
  ['password (always valid in ajv-formats)', { type: 'string', format: 'password' }, ['', 'hunter2'], [3]],
  ['int32 on a string is an annotation', { type: 'string', format: 'int32' }, ['abc', '99999999999'], [5]],
  ['int32 on an integer', { type: 'integer', format: 'int32' }, [0, -2147483648, 2147483647], [2147483648, -2147483649, 1.5]],
  ['int64 on a number', { type: 'number', format: 'int64' }, [0, -5, 9007199254740991], [1.5, -0.25]],
  ['float on a number', { type: 'number', format: 'float' }, [0, 1.5, -2e-7], ['x']],
  [
    'url (ajv-formats: a web URL with a public host)',
    { type: 'string', format: 'url' },
    ['https://example.com/a?b=1#c', 'HTTP://A.BC:8080', 'ftp://x-y.z.org/', 'http://a.io/"q"\\'],
    ['http://localhost', 'mailto:x@y.com', 'http://a..com', 'http://a-.com', 'https://a.b c', 'http://10.0.0.1/', 'http://a.com:1'],
  ],
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
  // multipleOf, any positive decimal: the number divided by it is an integer.
  ['multipleOf 0.01', { type: 'number', multipleOf: 0.01 }, [0, 599.99, -3.5, 12, 0.05], [0.001, 599.995, 1.234]],
  ['multipleOf 0.01 with bounds', { type: 'number', multipleOf: 0.01, minimum: 0, maximum: 99999999999.99 }, [0, 0.5, 99999999999.99, 12.34], [-0.01, 100000000000, 0.123]],
  ['multipleOf 0.1 within an exclusive range', { type: 'number', multipleOf: 0.1, exclusiveMinimum: -1, exclusiveMaximum: 2.5 }, [-0.9, 0, 2.2, 1], [-1, 2.5, 0.15]],
  ['multipleOf 0.25 from 0.25 up', { type: 'number', multipleOf: 0.25, minimum: 0.25 }, [0.25, 0.5, 1, 10.75, 1000000.5], [0, 0.1, 0.3, 1.2, -0.25]],
  ['multipleOf 1.5', { type: 'number', multipleOf: 1.5 }, [0, 4.5, -4.5, 1.5, 3], [35, 1, 0.5, 2.25]],
  ['multipleOf 1.5 on integers: every third', { type: 'integer', multipleOf: 1.5 }, [0, 3, -9, 300], [1.5, 4, 2]],
  ['multipleOf 4 between bounds', { type: 'integer', multipleOf: 4, minimum: 16, maximum: 100 }, [16, 20, 100], [12, 104, 18, 0]],
  ['multipleOf 16 across zero', { type: 'integer', multipleOf: 16, minimum: -2032, maximum: 2031 }, [-2032, -16, 0, 2016], [-2048, 2032, 8]],
  ['multipleOf 10 below an exclusive maximum', { type: 'number', multipleOf: 10, exclusiveMaximum: 100 }, [90, 0, -10, -1230], [100, 95, 110]],
  ['multipleOf 12 from 0', { type: 'integer', multipleOf: 12, minimum: 0 }, [0, 12, 1200], [-12, 6]],
  ['multipleOf 0.0001', { type: 'number', multipleOf: 0.0001 }, [0.0075, 1, 0.0001], [0.00751, 0.00001]],
  // Constants are written as a trie (xgrammar 0.1.27 read the plain choice ("1.25" | "1.5") as a loop and took "1.225").
  ['enum of texts sharing a prefix and a suffix', { enum: ['1.25', '1.5', '1.75', 'abcx', 'abx'] }, ['1.25', '1.5', '1.75', 'abcx', 'abx'], ['1.225', '1.725', '1.2225', 'abccx']],
  [
    'oneOf of constants sharing a prefix and a suffix',
    { oneOf: [{ const: '1.25', title: 'a' }, { const: '1.5' }, { enum: ['abcx', 'abx'] }, { type: 'integer' }] },
    ['1.25', '1.5', 'abx', 7],
    ['1.225', 'abccx', 1.5],
  ],
  // oneOf over number ranges: the numbers exactly one subschema holds.
  ['oneOf over two maxima', { type: 'number', oneOf: [{ maximum: 2 }, { maximum: 5 }] }, [2.5, 3, 5, 4.999], [2, 1, -7, 5.5, 0]],
  ['oneOf integer or from 2', { oneOf: [{ type: 'integer' }, { minimum: 2 }] }, [1, -3, 2.5, 100.25], [2, 3, 1.5, -0.5]],
  ['oneOf of every type but integer twice', { oneOf: [{ type: 'integer' }, { type: 'string' }, { type: 'number' }, { type: 'boolean' }, { type: 'null' }] }, [1.5, -0.25, 'x', true, null], [1, 0, -4]],
  [
    'oneOf over exclusive and inclusive ranges',
    { oneOf: [{ type: 'number', minimum: 0, exclusiveMaximum: 10 }, { type: 'integer', minimum: 5, maximum: 15 }, { type: 'string' }] },
    [0, 4.5, 5.5, 9.99, 10, 15, 'a'],
    [5, 9, -1, 15.5, 16, 10.5],
  ],
  // oneOf over string languages: the strings exactly one subschema matches (one automaton over all of them).
  [
    'oneOf over two unanchored patterns',
    {
      oneOf: [
        { type: 'string', pattern: 'APPROVER' },
        { type: 'string', pattern: 'SIGNER' },
      ],
    },
    ['APPROVER', 'xSIGNERy', 'the APPROVER'],
    ['APPROVER SIGNER', 'SIGNERAPPROVER', 'none', 1],
  ],
  [
    'oneOf over a length and a pattern, beside a constant and a number',
    { oneOf: [{ type: 'string', maxLength: 3 }, { type: 'string', pattern: '^a' }, { enum: ['zzzz', 'b'] }, { type: 'integer' }] },
    ['xyz', 'abcd', 'zzzz', 7, ''],
    ['ab', 'b', 'abc', 'bcde'],
  ],
  // Without `type` each pattern holds every non-string too: two of them leave strings only.
  ['oneOf over two bare patterns', { oneOf: [{ pattern: 'APPROVER' }, { pattern: 'SIGNER' }] }, ['APPROVER', 'xSIGNERy'], ['APPROVER SIGNER', 'none', 1, null, true, {}, []]],
  ['oneOf over bare patterns beside a constant', { oneOf: [{ pattern: '^a' }, { pattern: 'b$' }, { const: 'c' }] }, ['a', 'ax', 'xb', 'c'], ['ab', 'x', 2, null]],
  [
    'oneOf over bare patterns beside keywords no validator reads',
    {
      oneOf: [
        { name: 'New', pattern: '^NEW$' },
        { name: 'Old', pattern: '^OLD$' },
      ],
    },
    ['NEW', 'OLD'],
    ['new', 1],
  ],
  // Objects apart by a key both require: patterns that share no string, or values apart deeper down.
  [
    'oneOf over closed objects told apart by a pattern on a required key',
    {
      oneOf: [
        { type: 'object', properties: { type: { type: 'string', pattern: '^Abs$' }, a: { type: 'integer' } }, required: ['type'], additionalProperties: false },
        { type: 'object', properties: { type: { type: 'string', pattern: '^Add$' }, b: { type: 'integer' } }, required: ['type'], additionalProperties: false },
      ],
    },
    [{ type: 'Abs', a: 1 }, { type: 'Add' }, { type: 'Add', b: 2 }],
    [{ type: 'Mul' }, { type: 'Abs', b: 1 }, {}, 'Abs'],
  ],
  [
    'oneOf over objects told apart two keys down',
    {
      oneOf: [
        { type: 'object', properties: { from: { type: 'object', properties: { path: { const: 'a' } }, required: ['path'] } }, required: ['from'] },
        { type: 'object', properties: { from: { type: 'object', properties: { path: { const: 'b' } }, required: ['path'] } }, required: ['from'] },
      ],
    },
    [{ from: { path: 'a' } }, { from: { path: 'b' } }],
    [{ from: { path: 'c' } }, { from: {} }, {}],
  ],
  // if / then / else as cases split by the key the conditions ask: absent, each constant, any other value, non-objects.
  [
    'a switch: one if / then per constant under allOf',
    {
      type: 'object',
      properties: { handler: { type: 'string', enum: ['Page', 'Fluid', 'PHP'] }, code: { type: 'integer' } },
      required: ['handler'],
      allOf: [
        // biome-ignore lint/suspicious/noThenProperty: JSON Schema's keyword, not a thenable
        { if: { properties: { handler: { const: 'PHP' } } }, then: { properties: { cls: { type: 'string' } }, required: ['cls'] } },
        // biome-ignore lint/suspicious/noThenProperty: JSON Schema's keyword, not a thenable
        { if: { properties: { handler: { const: 'Fluid' } } }, then: { properties: { tpl: { type: 'string' } }, required: ['tpl'] } },
      ],
    },
    [{ handler: 'Page' }, { handler: 'PHP', cls: 'X' }, { handler: 'Fluid', code: 1, tpl: 't' }],
    [{ handler: 'PHP' }, { handler: 'Fluid', cls: 'X' }, {}, { handler: 'Other' }, 'PHP'],
  ],
  [
    'if / then / else on a required key of any string',
    {
      type: 'object',
      properties: { kind: { type: 'string' } },
      if: { properties: { kind: { const: 'u.ri' } }, required: ['kind'] },
      // biome-ignore lint/suspicious/noThenProperty: JSON Schema's keyword, not a thenable
      then: { properties: { source: { type: 'string' } }, required: ['source'] },
      else: { properties: { content: { type: 'string' } }, required: ['content'] },
    },
    [{ kind: 'u.ri', source: 's' }, { kind: 'text', content: 'c' }, { content: 'c' }, { kind: 'u.rix', content: 'c' }, { kind: 'uxri', content: 'c' }],
    [{ kind: 'u.ri', content: 'c' }, { kind: 'text', source: 's' }, { kind: 'u.ri' }, {}],
  ],
  [
    'if that holds only for objects, beside values that are not',
    {
      if: { type: 'object', properties: { t: { const: 'a' } }, required: ['t'] },
      // biome-ignore lint/suspicious/noThenProperty: JSON Schema's keyword, not a thenable
      then: { properties: { t: true, x: { type: 'integer' } }, required: ['x'] },
      else: { type: ['string', 'object'], properties: { t: true } },
    },
    [{ t: 'a', x: 1 }, { t: 'b' }, {}, 'str'],
    [{ t: 'a' }, 5, null, { t: 'a', x: 'no' }],
  ],
  [
    'if over either of two constants',
    {
      type: 'object',
      properties: { db: { type: 'string', enum: ['mysql', 'pg', 'file'] }, host: { type: 'string' } },
      required: ['db'],
      if: { anyOf: [{ properties: { db: { const: 'mysql' } } }, { properties: { db: { const: 'pg' } } }] },
      // biome-ignore lint/suspicious/noThenProperty: JSON Schema's keyword, not a thenable
      then: { required: ['host'] },
    },
    [{ db: 'mysql', host: 'h' }, { db: 'file' }, { db: 'file', host: 'h' }],
    [{ db: 'pg' }, { db: 'x' }, { host: 'h' }],
  ],
  // Arrays whose items are apart share only []: each written with an item.
  [
    'oneOf over arrays of numbers and of strings',
    {
      oneOf: [
        { type: 'array', items: { type: 'number' } },
        { type: 'array', items: { type: 'string' } },
      ],
    },
    [[1], [1.5, 2], ['a'], ['a', 'b']],
    [[], [1, 'a'], 'x', null],
  ],
  [
    'oneOf over arrays, one never empty',
    {
      oneOf: [
        { type: 'array', items: { type: 'number' }, minItems: 1 },
        { type: 'array', items: { type: 'string' } },
      ],
    },
    [[1], [], ['a']],
    [[1, 'a'], [true]],
  ],
  // A union apart from a branch: each of its branches is (composer's repositories: an entry, or {"name": false}).
  [
    'oneOf of a union of objects and a one-key object',
    {
      oneOf: [
        {
          type: 'object',
          oneOf: [
            { type: 'object', properties: { type: { const: 'vcs' }, url: { type: 'string' } }, required: ['type', 'url'], additionalProperties: false },
            { type: 'object', properties: { type: { const: 'path' }, url: { type: 'string' } }, required: ['type', 'url'], additionalProperties: false },
          ],
        },
        { type: 'object', additionalProperties: { enum: [false] }, minProperties: 1, maxProperties: 1 },
      ],
    },
    [{ type: 'vcs', url: 'u' }, { type: 'path', url: '' }, { 'packagist.org': false }],
    [{}, { a: true }, { type: 'vcs' }, { a: false, b: false }, { type: 'git', url: 'u' }],
  ],
  // Every non-empty string matches both: only "" matches exactly one.
  ['oneOf over any string and a non-empty one', { oneOf: [{ type: 'string' }, { type: 'string', minLength: 1 }] }, [''], ['a', 'xyz']],
  [
    'oneOf over a format and a pattern',
    {
      oneOf: [
        { type: 'string', format: 'ipv4' },
        { type: 'string', pattern: '^1\\.' },
      ],
    },
    ['10.0.0.1', '1.x', '2.2.2.2'],
    ['1.2.3.4', '3.x'],
  ],
  // A format beside a pattern: strings in both languages (an automaton over their derivatives).
  ['uri with an https pattern', { type: 'string', format: 'uri', pattern: '^https?://' }, ['https://a.b/c?d#e', 'http://x', 'https://[::1]:80/'], ['ftp://a', 'https:', 'https://a b', 'mailto:x']],
  ['date with a pattern', { type: 'string', format: 'date', pattern: '^20' }, ['2024-02-29', '2000-01-01'], ['1999-12-31', '2023-02-29', '20']],
  ['email with a pattern and lengths', { type: 'string', format: 'email', pattern: '\\.org$', maxLength: 12 }, ['a@b.org', 'abcd@ef.org'], ['a@b.com', 'abcdef@gh.org', '@b.org']],
  [
    'date-time with an unanchored pattern',
    { type: 'string', format: 'date-time', pattern: 'T\\d\\d:00' },
    ['2024-01-01T10:00:00Z', '2024-01-01T23:00:59+01:00'],
    ['2024-01-01T10:01:00Z', '2024-01-01 10:00:00Z'],
  ],
  ['a format and a pattern with nothing in common', { type: 'object', properties: { a: { type: 'string', format: 'ipv4', pattern: '^[a-z]+$' } } }, [{}], [{ a: 'abc' }, { a: '1.2.3.4' }]],
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
    // Past MAX_INTERSECTION_STATES rules (uri's automaton times a counted length).
    [{ type: 'string', format: 'uri', pattern: '^https://', maxLength: 200 }, 'format', '#/format'],
    // A range without type also matches every string: the string subschema's values would be written where two subschemas hold them.
    [{ oneOf: [{ minimum: 2 }, { type: 'string' }, { maximum: 5 }] }, 'oneOf', '#/oneOf'],
    // A string language beside one that also allows other values (no `type`): refused.
    [{ oneOf: [{ type: 'string', pattern: '^a' }, { pattern: 'b' }] }, 'oneOf', '#/oneOf'],
    [{ oneOf: [{ type: 'number', multipleOf: 2 }, { type: 'integer' }] }, 'oneOf', '#/oneOf'],
    // Bounds that cut an endless run of multiples are not written (only lists of multiples, or all of them above zero).
    [{ type: 'integer', multipleOf: 7, minimum: 100 }, 'multipleOf', '#/multipleOf'],
    [{ type: 'number', multipleOf: 0.123456789 }, 'multipleOf', '#/multipleOf'],
    [{ type: 'string', format: 'uri-template' }, 'format', '#/format'],
    [{ type: 'string', format: 'json-pointer' }, 'format', '#/format'],
    [{ type: 'string', format: 'idn-hostname' }, 'format', '#/format'],
    [{ type: 'array', items: { type: 'string' }, uniqueItems: true }, 'uniqueItems', '#/uniqueItems'],
    [{ type: 'array', prefixItems: [{ enum: [1, 2] }], uniqueItems: true }, 'uniqueItems', '#/uniqueItems'],
    [{ type: 'array', items: { enum: Array.from({ length: 11 }, (_, i) => i) }, uniqueItems: true }, 'uniqueItems', '#/uniqueItems'],
  ])('%j is refused naming %s at %s', (schema, keyword, path) => {
    expectRefused(schema, keyword, path);
  });
});

// JSON Schema's multipleOf is exact arithmetic (the JSON Schema Test Suite holds 0.0075 a multiple
// of 0.0001); ajv and Python jsonschema divide in floating point by default and call 0.07 no
// multiple of 0.01 (7.000000000000001). The grammar follows the definition: checked here by exact
// decimal arithmetic over many values, with ajv's tolerant mode agreeing.
it('multipleOf is exact decimal arithmetic', async () => {
  const tolerant = new Ajv2020({ strict: false, logger: false, multipleOfPrecision: 9 });
  for (const [multipleOf, scale] of [
    [0.01, 100],
    [0.25, 100],
    [0.3, 10],
  ] as const) {
    const schema = { type: 'number', multipleOf };
    const validate = tolerant.compile(schema);
    const step = Math.round(multipleOf * scale);
    await withGrammar(schema, async (accepts) => {
      for (let n = -130; n <= 130; n += 1) {
        // n / scale, and n / (10 * scale): exact decimals written as JSON writes them.
        for (const value of [n / scale, n / (10 * scale)]) {
          const scaled = Math.round(value * scale * 10);
          const exact = scaled % (step * 10) === 0;
          expect(await accepts(layoutJson(value)), `${value} against multipleOf ${multipleOf}`).toBe(exact);
          expect(validate(value), `ajv (tolerant) on ${value}`).toBe(exact);
        }
      }
    });
  }
});

it('oneOf over number ranges: exactly the numbers ajv accepts, every quarter from -15 to 15', async () => {
  const schema = {
    oneOf: [
      { type: 'integer', maximum: 3 },
      { type: 'number', exclusiveMinimum: -2.5, maximum: 7.25 },
      { type: 'number', minimum: 5, exclusiveMaximum: 12 },
      { type: 'integer', exclusiveMinimum: 0 },
    ],
  };
  const validate = ajv.compile(schema);
  await withGrammar(schema, async (accepts) => {
    for (let n = -60; n <= 60; n++) expect(await accepts(layoutJson(n / 4)), String(n / 4)).toBe(validate(n / 4) === true);
  });
});

it('oneOf over random string languages: the grammar agrees with ajv on random strings', async () => {
  const languages: object[] = [{ pattern: '^a' }, { pattern: 'b$' }, { maxLength: 2 }, { minLength: 3 }, { format: 'ipv4' }, { enum: ['ab', 'x'] }, { pattern: '[0-9]' }, {}];
  const pieces = ['a', 'b', '1', '.', 'x', 'ab', '0.0', '2'];
  let seed = 11;
  const next = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return Math.floor((seed / 2147483648) * n);
  };
  let agreedValid = 0;
  for (let round = 0; round < 12; round++) {
    const branches = Array.from({ length: 2 + next(2) }, () => ({ type: 'string', ...languages[next(languages.length)] }));
    const schema = { oneOf: branches };
    const validate = ajv.compile(schema);
    await withGrammar(schema, async (accepts) => {
      for (let i = 0; i < 40; i++) {
        let value = '';
        for (let k = next(5); k > 0; k--) value += pieces[next(pieces.length)]!;
        const valid = validate(value) === true;
        expect(await accepts(layoutJson(value)), `${JSON.stringify(schema)}: ${JSON.stringify(value)}`).toBe(valid);
        if (valid) agreedValid++;
      }
    });
  }
  expect(agreedValid).toBeGreaterThan(50);
});

// JSONSchemaBench's lookaheads, all at a pattern's top level (JSON Schema Store, GitHub): the rest
// of the string from where each stands intersected with (or less) its language, as an automaton.
it.each<[string, string[]]>([
  ['^(?!pattern$).*$', ['pattern', 'pat', 'p', 'x', 's', '\n']],
  ['^(?!interactive|name|style).+$', ['interactive', 'name', 'na', 'style', 'x', 's']],
  ['^(?!@@)[@a-zA-Z0-9_-]+$', ['@', '@@', 'a', '_', ' ']],
  ['^(?!org\\.bukkit\\.)([a-zA-Z_$][a-zA-Z\\d_$]*\\.)*[a-zA-Z_$][a-zA-Z\\d_$]*$', ['org', '.', 'bukkit', 'a', '1', 'io']],
  ['^(?![i|I][o|O][b|B][r|R][o|O][k|K][e|E][r|R])', ['io', 'IO', 'broker', 'BROKER', 'x', '|']],
  ['^(?!.*\\/)^(.*[^.]+.*)$', ['/', '.', 'a', '..']],
  ['^(?!^lucene\\.|builtin\\.|mongodb\\.).*', ['lucene', 'builtin', 'mongodb', '.', 'x']],
  ['^(?![ \\t\\n]*\\(default(.*)\\))[\\s\\S]*', [' ', '\t', '(default(', '(default', ')', 'x']],
  ['((?:[^/]*/)*)(?=\\.(yaml|yml|json))', ['a', '/', '.', 'yaml', 'yml', 'json', 'x']],
  ['^(?=a)(?!ab).{2,3}$', ['a', 'b', 'c']],
  ['x(?=y$)', ['x', 'y', 'z']],
])('the lookahead of %s: the grammar agrees with the RegExp on random strings', async (pattern, pieces) => {
  const regex = new RegExp(pattern, 'u');
  let seed = pattern.length;
  const next = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return Math.floor((seed / 2147483648) * n);
  };
  const seen = { true: 0, false: 0 };
  await withGrammar({ type: 'string', pattern }, async (accepts) => {
    for (let i = 0; i < 150; i++) {
      let value = '';
      for (let k = next(6); k > 0; k--) value += pieces[next(pieces.length)]!;
      const valid = regex.test(value);
      expect(await accepts(layoutJson(value)), JSON.stringify(value)).toBe(valid);
      seen[`${valid}`]++;
    }
  });
  expect(seen.true).toBeGreaterThan(5);
  expect(seen.false).toBeGreaterThan(5);
});

// A regex spec (vLLM's `regex`, a custom tool's regex) is the whole output: a top-level lookahead
// there is the same intersection, written over the text itself.
it.each<[string, string[]]>([
  ['(?!ab)[a-c]{2,3}', ['a', 'b', 'c', 'ab']],
  ['(?=.*[0-9])[a-z0-9]{3,5}', ['a', 'z', '1', '9', '-']],
  ['(?!(?:cat|dog)$)[a-z]+|[0-9]+', ['cat', 'dog', 'ca', 's', '7']],
])('a regex spec with the lookahead %s: the grammar agrees with the RegExp on random strings', async (pattern, pieces) => {
  const regex = new RegExp(`^(?:${pattern})$`, 'u');
  const grammar = await xgrammar.api.Grammar.fromEBNF(regexSpecGrammar(pattern));
  let seed = pattern.length;
  const next = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return Math.floor((seed / 2147483648) * n);
  };
  const seen = { true: 0, false: 0 };
  try {
    for (let i = 0; i < 150; i++) {
      let value = '';
      for (let k = next(6); k > 0; k--) value += pieces[next(pieces.length)]!;
      const valid = regex.test(value);
      expect(await xgrammar.api.Testings.isGrammarAcceptString(grammar, value), JSON.stringify(value)).toBe(valid);
      seen[`${valid}`]++;
    }
  } finally {
    grammar.dispose();
  }
  expect(seen.true).toBeGreaterThan(5);
  expect(seen.false).toBeGreaterThan(5);
});

it('a lookahead with lengths and beside a format: all three hold', async () => {
  const schema = { type: 'object', properties: { a: { type: 'string', pattern: '^(?!x)', maxLength: 3 }, d: { type: 'string', format: 'date', pattern: '^(?!2000)' } } };
  const validate = ajv.compile(schema);
  await withGrammar(schema, async (accepts) => {
    const values: Json[] = [{ a: 'abc' }, { a: 'abcd' }, { a: 'xa' }, { a: '' }, { d: '2001-01-01' }, { d: '2000-01-01' }, { d: '2001-13-01' }];
    for (const value of values) {
      expect(await accepts(layoutJson(value)), JSON.stringify(value)).toBe(validate(value) === true);
    }
  });
});

it('uri beside a pattern: no random string the grammar accepts fails ajv, and it accepts many', async () => {
  const schema = { type: 'string', format: 'uri', pattern: '^(https?|s?ftp)://.+' };
  const validate = ajv.compile(schema);
  const pieces = ['http', 's', 'ftp', '://', ':', '/', '?', '#', '@', 'a', 'Z', '0', '%2F', '%g', '[', '::1', ']', ' ', '.', '-', 'é', '~'];
  let seed = 7;
  const next = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return Math.floor((seed / 2147483648) * n);
  };
  let accepted = 0;
  await withGrammar(schema, async (accepts) => {
    for (let i = 0; i < 300; i++) {
      let value = ['http://', 'https://', 'sftp://', 'ftp:', 'a://', ''][next(6)]!;
      for (let k = next(6); k > 0; k--) value += pieces[next(pieces.length)]!;
      // The uri grammar is RFC 3986's, a little narrower than ajv's pattern ("https://%2F:Z" passes ajv): one way only.
      if (!(await accepts(layoutJson(value)))) continue;
      accepted++;
      expect(validate(value), `ajv accepts ${JSON.stringify(value)}, which the grammar accepts`).toBe(true);
    }
  });
  expect(accepted).toBeGreaterThan(20);
});

it('format url: no random string the grammar accepts fails ajv-formats, and it accepts many', async () => {
  const schema = { type: 'string', format: 'url' };
  const validate = ajv.compile(schema);
  const pieces = ['a', 'Z9', '-', '.', '..', 'com', 'io', ':', ':80', ':123456', '/', '?x=1', '#', '@', ' ', '%20', 'é', '1.2.3.4', '"', '\\'];
  let seed = 11;
  const next = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return Math.floor((seed / 2147483648) * n);
  };
  let accepted = 0;
  await withGrammar(schema, async (accepts) => {
    for (let i = 0; i < 400; i++) {
      let value = ['http://', 'https://', 'ftp://', 'HTTPS://', 'file://', 'http:/', ''][next(7)]!;
      value += ['a', 'b-c', 'x9', '-a', 'é', ''][next(6)]! + ['.com', '.io', '.c', '.1', ''][next(5)]!;
      for (let k = next(4); k > 0; k--) value += pieces[next(pieces.length)]!;
      if (!(await accepts(layoutJson(value)))) continue;
      accepted++;
      expect(validate(value), `ajv accepts ${JSON.stringify(value)}, which the grammar accepts`).toBe(true);
    }
  });
  expect(accepted).toBeGreaterThan(20);
});

/** Every array of up to `length` items drawn (with repeats) from the values. */
function arraysOver(values: readonly Json[], length: number): Json[][] {
  const out: Json[][] = [[]];
  for (let size = 1, layer: Json[][] = [[]]; size <= length; size++) {
    layer = layer.flatMap((prefix) => values.map((value) => [...prefix, value]));
    out.push(...layer);
  }
  return out;
}

it('uniqueItems over 7 values with maxItems 3: exactly the arrays ajv accepts', async () => {
  const values: Json[] = [16, -16, 'a', 'ab', true, { k: 1 }, [1]];
  const schema = { type: 'array', items: { enum: values }, uniqueItems: true, maxItems: 3 };
  const validate = ajv.compile(schema);
  await withGrammar(schema, async (accepts) => {
    for (const array of arraysOver([...values, 48], 3)) expect(await accepts(layoutJson(array)), JSON.stringify(array)).toBe(validate(array) === true);
  });
});

// Listed multiples on both sides of zero (xgrammar 0.1 accepted "-4000" where each negative one was its own "-" "16" alternative).
it('multipleOf between bounds: exactly the listed multiples, every integer in and around the range checked', async () => {
  const schema = { type: 'integer', multipleOf: 16, minimum: -2032, maximum: 2031 };
  const validate = ajv.compile(schema);
  await withGrammar(schema, async (accepts) => {
    for (let n = -4100; n <= 4100; n += 4) expect(await accepts(String(n)), String(n)).toBe(validate(n) === true);
  });
});

/** Strings over base64's alphabet, padding and a few characters outside it, from a fixed seed. */
function randomBase64ish(count: number): string[] {
  const pieces = ['A', 'z', '0', '9', '+', '/', '=', '==', 'YQ', 'YWJj', ' ', '-', '_', '\n', '\r', '\u2028', '!'];
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

// ajv-formats tests its byte pattern in multiline mode: a string passes when any one of its lines
// is base64 or empty ("!\n" does, and a PEM certificate), and the grammar writes exactly that.
it('format byte accepts exactly the random strings ajv-formats accepts, line breaks included', async () => {
  const schema = { type: 'string', format: 'byte' };
  const validate = ajv.compile(schema);
  let valid = 0;
  await withGrammar(schema, async (accepts) => {
    for (const value of [...randomBase64ish(400), '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----', 'x\r\ny', 'x\u2028YQ==\u2028y', 'x\u2028y']) {
      const byAjv = validate(value) === true;
      if (byAjv) valid++;
      expect(await accepts(layoutJson(value)), `grammar and ajv agree on ${JSON.stringify(value)}`).toBe(byAjv);
    }
  });
  // The sample reaches both sides, so the check has teeth.
  expect(valid).toBeGreaterThan(20);
});
