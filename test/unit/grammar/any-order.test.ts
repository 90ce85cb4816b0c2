// Objects in any key order ("x-property-order": "any"): which object schemas the plan lets the
// translation loosen (and which keep the schema's order), and, through the real Qwen3 vocabulary,
// that the grammar's member loop and the guard beside it accept exactly what ajv accepts — every
// order of the keys, never a key twice, never a missing required key — and that random walks
// under the masks never meet a mask allowing nothing.

import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { anyOrderCandidates, mergedView } from '../../../src/grammar/json-schema/any-order.js';
import { guardPlan } from '../../../src/grammar/json-schema/guard-plan.js';
import { KeyLanguage } from '../../../src/grammar/json-schema/key-language.js';
import type { layoutJson } from '../../../src/grammar/schema-grammar.js';
import { openQwen3Grammar, QWEN3_STOP, type Qwen3Grammar } from '../../support/qwen3-grammar.js';
import { seededRandom } from '../../support/seeded-random.js';

type Json = Parameters<typeof layoutJson>[0];
type Schema = { [key: string]: Json };

const ajv = new Ajv2020({ strict: false });
const anyOrder = (schema: Schema): Schema => ({ 'x-property-order': 'any', ...schema });
const closed = (properties: Schema, required: string[] = []): Schema => ({ type: 'object', properties, required, additionalProperties: false });
/** The object schemas a plan lets the translation write in any order, by their property names. */
const loosened = (schema: Schema): string[] => {
  const plan = guardPlan(schema, false, 'forbid', true);
  // A merged allOf by its merge's properties.
  const named = (node: Schema): string => (Array.isArray(node['allOf']) ? `allOf(${named(mergedView(schema, node)!)})` : Object.keys(node['properties'] as Schema).join(','));
  return [...(plan?.anyOrder ?? [])].map((node) => named(node as Schema)).sort();
};

/** Pokémon games, as JSONSchemaBench's o48423 names its pokedex entries' keys: matched anywhere in a key. */
const GAMES =
  "Red|Blue|Yellow|Gold|Silver|Crystal|Ruby|Sapphire|Emerald|FireRed|LeafGreen|Diamond|Pearl|Platinum|HeartGold|SoulSilver|Black|White|Black 2|White 2|X|Y|Omega Ruby|Alpha Sapphire|Sun|Moon|Ultra Sun|Ultra Moon|Let's Go Pikachu|Let's Go Eevee";

/** A union told apart by `kind`, whose `inputs[]` objects share `type` under different schemas (CWL's CommandLineTool / Workflow). */
const narrowed: Schema = {
  oneOf: [
    closed({ kind: { const: 'tool' }, inputs: { type: 'array', maxItems: 2, items: closed({ id: { type: 'string' }, type: { enum: ['File', 'int'] } }, ['id', 'type']) } }, ['kind']),
    closed({ kind: { const: 'flow' }, inputs: { type: 'array', maxItems: 2, items: closed({ id: { type: 'string' }, type: closed({ items: { type: 'string' } }) }, ['id']) } }, ['kind']),
  ],
};

describe('which objects are written in any order', () => {
  it('an object that says only which keys it names, requires and allows, wherever the plan follows the document', () => {
    const item = closed({ id: { type: 'integer' }, tags: { type: 'array', items: { type: 'string' } } }, ['id']);
    expect(loosened(closed({ a: { type: 'string' }, b: item }, ['a']))).toEqual(['a,b', 'id,tags']);
    expect(loosened({ type: 'array', items: { $ref: '#/$defs/item' }, $defs: { item } })).toEqual(['id,tags']);
    // Beside a string alternative: one alternative allows objects.
    expect(loosened({ anyOf: [item, { type: 'string', maxLength: 20 }] })).toEqual(['id,tags']);
    // Recursion through $ref.
    const tree = { $defs: { node: closed({ name: { type: 'string' }, kids: { type: 'array', items: { $ref: '#/$defs/node' } } }, ['name']) }, $ref: '#/$defs/node' };
    expect(loosened(tree)).toEqual(['name,kids']);
  });

  it('several object schemas at one place where keys and string constants tell them apart', () => {
    const a = closed({ kind: { const: 'a' }, x: { type: 'integer' }, note: { type: 'string' } }, ['kind']);
    const b = closed({ kind: { enum: ['b', 'c'] }, y: { type: 'integer' }, note: { type: 'string' } }, ['kind']);
    expect(loosened({ anyOf: [a, b] })).toEqual(['kind,x,note', 'kind,y,note']);
    expect(loosened({ oneOf: [{ $ref: '#/$defs/a' }, { $ref: '#/$defs/b' }], $defs: { a, b } })).toEqual(['kind,x,note', 'kind,y,note']);
    // Beside a sibling every value meets (WashingtonPost's root `additionalProperties: {}` next to its anyOf).
    expect(loosened({ additionalProperties: {}, anyOf: [{ $ref: '#/$defs/a' }, { $ref: '#/$defs/b' }], $defs: { a, b } })).toEqual(['kind,x,note', 'kind,y,note']);
    expect(loosened({ type: 'object', additionalProperties: {}, anyOf: [a, b] })).toEqual(['kind,x,note', 'kind,y,note']);
    // A key both allow with different schemas: which one holds is decided by a value the guard does not read (unless a key both require tells them apart).
    const c = closed({ kind: { const: 'c' }, x: { type: 'string' } });
    expect(loosened({ anyOf: [a, c] })).toEqual([]);
    expect(loosened({ anyOf: [a, { ...c, required: ['kind'] }] })).toEqual(['kind,x', 'kind,x,note']);
    // ... there; where the same schema stands alone, in any order there (the translation writes it per place).
    const both = { type: 'object', properties: { one: a, either: { anyOf: [a, c] } } };
    expect(loosened(both)).toEqual(['kind,x,note', 'one,either']);
    expect([...guardPlan(both, false, 'forbid', true)!.mixed]).toEqual([a]);
    // Open objects whose unnamed keys take different values: apart only by a key both require.
    const { required: _a, ...aOptional } = a;
    expect(
      loosened({
        anyOf: [
          { ...aOptional, additionalProperties: { type: 'integer' } },
          { ...b, additionalProperties: true },
        ],
      }),
    ).toEqual([]);
    expect(
      loosened({
        anyOf: [
          { ...a, additionalProperties: { type: 'integer' } },
          { ...b, additionalProperties: true },
        ],
      }),
    ).toEqual(['kind,x,note', 'kind,y,note']);
  });

  it('an object saying more of its keys than required (oneOf over required, dependencies, counts): its statement is the guard’s', () => {
    expect(loosened({ ...closed({ p: true, q: true }), minProperties: 1, maxProperties: 2 })).toEqual(['p,q']);
    expect(loosened({ ...closed({ p: true, q: true }), dependentRequired: { p: ['q'] } })).toEqual(['p,q']);
    expect(loosened({ ...closed({ build: true, image: true, cmd: true }), oneOf: [{ required: ['build'] }, { required: ['image'] }] })).toEqual(['build,image,cmd']);
    expect(loosened({ ...closed({ p: true, q: true }), not: { required: ['p', 'q'] } })).toEqual(['p,q']);
  });

  it('an allOf the translation merges into such an object, alone or beside another object', () => {
    const a = closed({ kind: { const: 'a' }, x: { type: 'integer' } }, ['kind']);
    expect(loosened({ allOf: [a, { required: ['x'] }] })).toEqual(['allOf(kind,x)']);
    const section = closed({ type: { enum: ['section'] }, name: { type: 'string' } }, ['type', 'name']);
    const reference = closed({ type: { enum: ['reference'] }, referent: closed({ id: { type: 'string' } }, ['id']) }, ['type']);
    expect(loosened({ oneOf: [section, { allOf: [{ $ref: '#/$defs/reference' }, { properties: { referent: true } }] }], $defs: { reference } })).toEqual(['allOf(type,referent)', 'id', 'type,name']);
    // A merge saying more than keys (a union inside): the order stays.
    expect(loosened({ allOf: [a, { anyOf: [{ required: ['x'] }, { properties: { x: { type: 'null' } } }] }] })).toEqual([]);
  });

  it('a closed object beside patternProperties: the guard follows the patterns’ keys as their language', () => {
    expect(loosened({ ...closed({ p: true }), patternProperties: { '^x-': true } })).toEqual(['p']);
    expect(loosened({ ...closed({ default: true }), patternProperties: { '^[1-5][0-9]{2}$': { type: 'string' } } })).toEqual(['default']);
    // A pattern matching anywhere in a key: every key text goes on into infinitely many keys, no automaton needed (this one's is past MAX_AUTOMATON_STATES).
    expect(loosened({ ...closed({ p: true }), patternProperties: { [GAMES]: true } })).toEqual(['p']);
    const games = KeyLanguage.of([GAMES])!;
    expect(games.matches('Let’s Go Red') && !games.matches('Green')).toBe(true);
    expect(games.endless(games.stateAfter([0x47]))).toBe(true);
    expect(KeyLanguage.of(['^(Red|Blue)$'])!.keysLeft(0)).toBe(2);
  });

  it('objects beneath a union a required key tells apart: in any order at each object’s own place, after that key', () => {
    const plan = guardPlan(narrowed, false, 'forbid', true)!;
    expect(loosened(narrowed)).toEqual(['id,type', 'id,type', 'items', 'kind,inputs', 'kind,inputs']);
    // The items stay in the schema's order where the union's place holds them (before the key), so they are written per place.
    const items = (narrowed['oneOf'] as Schema[]).map((o) => ((o['properties'] as Schema)['inputs'] as Schema)['items'] as object);
    expect(items.every((item) => plan.mixed.has(item))).toBe(true);
    const union = plan.places.find((place) => place.narrowing !== undefined)!;
    expect(union.narrowing!.key).toBe('kind');
    expect(union.narrowing!.places.map((index) => plan.places[index]!.objectNodes.length)).toEqual([1, 1]);
  });

  it('keeps the schema order where the guard could not tell which object holds, or what more it says of keys', () => {
    const a = closed({ kind: { const: 'a' }, x: { type: 'integer' } }, ['kind']);
    // Keys a closed object's patterns allow where the guard cannot read the patterns as a language (a backreference); an anyOf that is more than a statement about keys.
    expect(loosened({ ...closed({ p: true }), patternProperties: { '^(a)\\1$': true } })).toEqual([]);
    expect(loosened({ ...closed({ p: true, q: true }), anyOf: [{ required: ['p'] }, { properties: { q: { type: 'null' } } }] })).toEqual([]);
    // Beneath keywords the plan does not follow (`contains`, `not`): the grammar there is not where the guard looks.
    expect(anyOrderCandidates({ type: 'array', contains: a }, true).has(a)).toBe(false);
    expect(loosened({ type: 'array', items: a, contains: a })).toEqual([]);
  });
});

describe('with the Qwen3 vocabulary', () => {
  let grammar: Qwen3Grammar;
  beforeAll(async () => {
    grammar = await openQwen3Grammar();
  }, 120_000);
  afterAll(async () => grammar?.engine.dispose());

  const profile = closed(
    {
      name: { type: 'string' },
      age: { type: 'integer', minimum: 0 },
      'a"b': { type: 'boolean' },
      nick: { type: 'string', maxLength: 12 },
      nickname: { type: 'null' },
      address: closed({ city: { type: 'string' }, zip: { type: 'string', pattern: '^[0-9]{5}$' } }, ['city']),
      pets: { type: 'array', items: closed({ kind: { enum: ['cat', 'dog'] }, name: { type: 'string' } }, ['kind']) },
    },
    ['name', 'age'],
  );

  it.each<[string, Schema, Json[], Json[]]>([
    [
      'a closed object: every order of its keys, nested objects and array items too',
      profile,
      [
        { name: 'Ann', age: 3 },
        { age: 3, name: 'Ann' },
        { address: { zip: '12345', city: 'Oslo' }, age: 0, nickname: null, name: '', nick: 'nnnnnnnnnnnn' },
        { pets: [{ name: 'Rex', kind: 'dog' }, { kind: 'cat' }], 'a"b': true, age: 1, name: 'x' },
        { nickname: null, nick: 'n', age: 5, name: 'y' },
      ],
      [
        { name: 'Ann' },
        { age: 3 },
        {},
        { age: 3, name: 'Ann', zz: 1 },
        { age: -1, name: 'A' },
        { name: 'A', age: 1, nick: 'n'.repeat(13) },
        { age: 1, name: 'A', address: { zip: '12345' } },
        { age: 1, name: 'A', pets: [{ name: 'Rex' }] },
      ],
    ],
    [
      'oneOf over required (exactly one of build / image), a dependency and counts, in any order',
      {
        ...closed({ build: { type: 'string' }, image: { type: 'string' }, command: { type: 'string' }, ports: { type: 'array', items: { type: 'string' } }, user: { type: 'null' } }),
        oneOf: [{ required: ['build'] }, { required: ['image'] }],
        dependentRequired: { ports: ['command'] },
        maxProperties: 4,
      },
      [{ build: '.' }, { command: 'up', image: 'pg' }, { ports: ['80'], command: 'run', build: '.' }, { user: null, ports: [], image: 'x', command: 'c' }],
      [{}, { command: 'up' }, { image: 'a', build: 'b' }, { ports: ['80'], image: 'x' }, { user: null, ports: [], image: 'x', command: 'c', build: 'b' }],
    ],
    [
      'an open object under minProperties and not-both: unnamed keys count',
      { type: 'object', properties: { a: { type: 'integer' }, b: { type: 'integer' } }, not: { required: ['a', 'b'] }, minProperties: 2, additionalProperties: { type: 'null' } },
      [
        { z: null, a: 1 },
        { a: 1, z: null },
        { y: null, x: null },
        { b: 2, q: null, r: null },
      ],
      [{ a: 1 }, { a: 1, b: 2 }, { b: 1, a: 2, z: null }, {}],
    ],
    [
      'an open object: its unnamed keys anywhere, each named key by its schema',
      { type: 'object', properties: { id: { type: 'integer' }, label: { type: 'string' } }, required: ['id'], additionalProperties: { type: 'string' } },
      [{ id: 1 }, { zeta: 'z', id: 1 }, { label: 'l', alpha: 'a', id: 2, idx: 'i' }],
      [{ zeta: 'z' }, { zeta: 1, id: 1 }, { id: 'one' }, { label: 2, id: 1 }],
    ],
    [
      'a union told apart by its keys and its string constants, the deciding key anywhere',
      {
        anyOf: [
          closed({ kind: { const: 'a' }, x: { type: 'integer' }, note: { type: 'string' } }, ['kind', 'x']),
          closed({ kind: { enum: ['b', 'c'] }, y: { type: 'boolean' }, note: { type: 'string' } }, ['kind']),
          { type: 'string' },
        ],
      },
      [{ kind: 'a', x: 1 }, { x: 1, note: 'n', kind: 'a' }, { kind: 'b' }, { note: '', kind: 'c', y: true }, { y: false, kind: 'b' }, 'text'],
      [{ kind: 'a' }, { x: 1, kind: 'b' }, { kind: 'a', y: true, x: 1 }, { note: 'n' }, { y: true }, { kind: 'd' }, {}],
    ],
    [
      'a union beside siblings that add nothing (additionalProperties: {}, type: object), a recursive list',
      {
        type: 'object',
        additionalProperties: {},
        anyOf: [{ $ref: '#/$defs/list' }, { $ref: '#/$defs/text' }],
        $defs: {
          list: closed({ type: { enum: ['list'] }, list_type: { type: 'string' }, items: { type: 'array', items: { $ref: '#' } } }, ['type']),
          text: closed({ type: { enum: ['text'] }, content: { type: 'string' } }, ['type']),
        },
      },
      [
        {
          type: 'list',
          list_type: 'unordered',
          items: [
            { type: 'text', content: 'a' },
            { content: 'b', type: 'text' },
          ],
        },
        { items: [], type: 'list' },
      ],
      [{ type: 'list', content: 'a' }, { type: 'text', items: [] }, { items: [{ type: 'text', x: 1 }], type: 'list' }, { list_type: 'x' }],
    ],
    [
      'a closed object beside patternProperties (infinitely many keys, and finitely many): pattern keys anywhere, none twice',
      {
        ...closed({ version: { type: 'string' }, errors: { ...closed({ default: { type: 'string' } }), patternProperties: { '^[1-5][0-9]{2}$': { type: 'string' } } } }, ['version']),
        patternProperties: { '^x-': { type: 'integer' } },
      },
      [{ version: '1' }, { 'x-a': 1, version: '1', 'x-b': 2 }, { errors: { 404: 'a', default: 'd', 500: 'b' }, 'x-': 0, version: '2' }],
      [{ 'x-a': 1 }, { version: '1', other: 1 }, { version: '1', 'x-a': 'one' }, { version: '1', errors: { 600: 'a' } }, { version: '1', errors: { 40: 'a' } }],
    ],
    [
      'a closed object beside a pattern that matches anywhere in a key (a long unanchored alternation): its keys anywhere, none twice',
      { ...closed({ name: { type: 'string' } }, ['name']), patternProperties: { [GAMES]: { type: 'integer' } } },
      [{ name: 'a' }, { 'in Red': 1, name: 'a', 'Ultra Moon!': 2 }, { Sun: 1, 'Moon Sun': 2, name: 'b' }],
      [{ 'in Red': 1 }, { name: 'a', Green: 1 }, { name: 'a', Red: 'x' }, { name: 'a', red: 1 }],
    ],
    [
      'a union of an object and a merged allOf (a reference narrowed), each in any order',
      {
        oneOf: [
          closed({ type: { enum: ['section'] }, name: { type: 'string' }, note: { type: 'string' } }, ['type', 'name']),
          { allOf: [{ $ref: '#/$defs/reference' }, { properties: { referent: { properties: { type: { enum: ['section'] } } } } }] },
        ],
        $defs: { reference: closed({ type: { enum: ['reference'] }, referent: closed({ id: { type: 'string' }, type: { type: 'string' } }, ['id']), note: { type: 'string' } }, ['type', 'referent']) },
      },
      [
        { name: 'A', type: 'section' },
        { type: 'section', note: 'n', name: 'A' },
        // (A property both merged subschemas name is itself a merge the plan does not know: its keys keep the schema's order.)
        { referent: { id: '1', type: 'section' }, type: 'reference' },
        { note: 'x', type: 'reference', referent: { id: '2' } },
      ],
      [
        { type: 'section' },
        { type: 'reference', referent: { id: '1', type: 'video' } },
        { type: 'reference', name: 'A', referent: { id: '1' } },
        { referent: { id: '1' } },
        { name: 'A', type: 'reference' },
      ],
    ],
    [
      'an object in any order where it stands alone, though in the schema’s order inside a union the guard cannot tell apart',
      {
        type: 'object',
        properties: { item: { $ref: '#/$defs/a' }, either: { anyOf: [{ $ref: '#/$defs/a' }, { $ref: '#/$defs/c' }] } },
        $defs: { a: closed({ kind: { type: 'string' }, x: { type: 'integer' } }, ['x']), c: closed({ kind: { type: 'integer' }, y: { type: 'integer' } }, ['y']) },
      },
      [{ item: { x: 1, kind: 'k' } }, { either: { kind: 'k', x: 1 }, item: { x: 2 } }, { either: { kind: 2, y: 1 } }],
      [{ item: { kind: 'k' } }, { item: { x: 1, y: 2 } }, { either: { kind: 'k', y: 1 } }],
    ],
    [
      'a union whose objects share a key under different schemas, told apart by a key each requires',
      {
        anyOf: [
          closed({ kind: { const: 'a' }, x: { type: 'integer' }, note: { type: 'string' } }, ['kind', 'x']),
          closed({ kind: { enum: ['b', 'c'] }, x: { type: 'string' }, y: { type: 'boolean' } }, ['kind']),
        ],
      },
      [
        { x: 1, kind: 'a' },
        { note: 'n', x: 2, kind: 'a' },
        { x: 's', kind: 'b' },
        { y: true, kind: 'c' },
        { kind: 'b', x: 't' },
      ],
      [{ x: 's', kind: 'a' }, { x: 1, kind: 'b' }, { x: 1 }, { kind: 'a' }, { y: true, kind: 'a', x: 1 }, { note: 'n', kind: 'b' }],
    ],
    [
      'objects beneath such a union that the union leaves apart: in any order once the deciding key is written (CWL’s tools’ inputs by their class)',
      narrowed,
      [
        { kind: 'tool', inputs: [{ type: 'File', id: 'i' }] },
        { kind: 'flow', inputs: [{ type: { items: 'File' }, id: 'i' }, { id: 'j' }] },
        { inputs: [{ id: 'i', type: 'File' }], kind: 'tool' },
        { inputs: [], kind: 'flow' },
      ],
      [
        { kind: 'tool', inputs: [{ type: { items: 'File' }, id: 'i' }] },
        { kind: 'flow', inputs: [{ type: 'File', id: 'i' }] },
        { kind: 'tool', inputs: [{ id: 'i' }] },
      ],
    ],
  ])('%s', async (_, schema, valid, invalid) => {
    const validate = ajv.compile(schema);
    for (const value of valid) {
      expect(validate(value), `ajv: ${JSON.stringify(value)} valid`).toBe(true);
      expect(await grammar.masksAccept(anyOrder(schema), value), `masks accept ${JSON.stringify(value)}`).toBe(true);
    }
    for (const value of invalid) {
      expect(validate(value), `ajv: ${JSON.stringify(value)} invalid`).toBe(false);
      expect(await grammar.masksAccept(anyOrder(schema), value), `masks refuse ${JSON.stringify(value)}`).toBe(false);
    }
  });

  it('never a key twice, named or not; the default still writes the schema order', async () => {
    const open = { type: 'object', properties: { a: { type: 'integer' } }, additionalProperties: true };
    expect(await grammar.masksAcceptText(anyOrder(profile), '{"name": "A", "age": 1, "name": "B"}')).toBe(false);
    expect(await grammar.masksAcceptText(anyOrder(profile), '{"age": 1, "name": "A", "age": 2}')).toBe(false);
    expect(await grammar.masksAcceptText(anyOrder(open), '{"a": 1, "a": 2}')).toBe(false);
    expect(await grammar.masksAcceptText(anyOrder(open), '{"q": 1, "q": 2}')).toBe(false);
    expect(await grammar.masksAcceptText(anyOrder(open), '{"q": 1, "a": 2, "qq": 3}')).toBe(true);
    const patterned = { ...closed({ version: { type: 'null' } }), patternProperties: { '^x-': { type: 'null' }, '^[ab]$': { type: 'null' } } };
    expect(await grammar.masksAcceptText(anyOrder(patterned), '{"x-a": null, "version": null, "x-a": null}')).toBe(false);
    expect(await grammar.masksAcceptText(anyOrder(patterned), '{"a": null, "version": null, "a": null}')).toBe(false);
    expect(await grammar.masksAcceptText(anyOrder(patterned), '{"a": null, "version": null, "b": null, "x-a": null}')).toBe(true);
    // Without the keyword (and with "schema"), only the schema's order.
    expect(await grammar.masksAccept(profile, { age: 3, name: 'Ann' })).toBe(false);
    expect(await grammar.masksAccept({ ...profile, 'x-property-order': 'schema' }, { age: 3, name: 'Ann' })).toBe(false);
    expect(await grammar.masksAccept(profile, { name: 'Ann', age: 3 })).toBe(true);
  });

  it('an object whose keys can never meet what it says of them allows no value, in either order', async () => {
    // Glaive's calculate_area: all four keys required, and exactly one of radius / side / base and height.
    const schema = {
      ...closed({ radius: { type: 'number' }, side: { type: 'number' }, base: { type: 'number' } }, ['radius', 'side', 'base']),
      oneOf: [{ required: ['radius'] }, { required: ['side'] }, { required: ['base'] }],
    };
    for (const order of [schema, anyOrder(schema)]) await expect(grammar.engine.compile({ kind: 'json_schema', schema: JSON.stringify(order) })).rejects.toThrow(/allows no value/);
  });

  it('refuses an unknown x-property-order by name', async () => {
    await expect(grammar.engine.compile({ kind: 'json_schema', schema: JSON.stringify({ ...profile, 'x-property-order': 'sorted' }) })).rejects.toThrow(/x-property-order.*"schema" or "any"/);
  });

  /** Seeded random walks under the masks: each must never meet a mask allowing nothing, and each finished one must be valid (ajv); the key orders written. */
  async function walks(schema: Schema, seedBase: number): Promise<{ finished: number; orders: Set<string>; documents: Schema[] }> {
    const validate = ajv.compile(schema);
    const constraint = await grammar.engine.compile({ kind: 'json_schema', schema: JSON.stringify(anyOrder(schema)) });
    const orders = new Set<string>();
    const documents: Schema[] = [];
    let finished = 0;
    for (let seed = 0; seed < 40; seed++) {
      const random = seededRandom(seedBase + seed);
      const matcher = await grammar.engine.matcher(constraint, [QWEN3_STOP]);
      const out: number[] = [];
      try {
        while (out.length < 160 && !matcher.isTerminated()) {
          const allowed = allowedIds(await matcher.nextTokenMask());
          expect(allowed.length, `seed ${seed} after ${out.length} tokens: ${out.join(' ')}`).toBeGreaterThan(0);
          // Structure over long values: the stop token and one-byte tokens most of the time.
          const short = allowed.filter((id) => id < 256 || id === QWEN3_STOP);
          const id = short.length > 0 && random() < 0.9 ? short[Math.floor(random() * short.length)]! : allowed[Math.floor(random() * allowed.length)]!;
          expect(matcher.accept(id)).toBe(true);
          if (id !== QWEN3_STOP) out.push(id);
        }
        if (!matcher.isTerminated()) continue;
        finished++;
        const document = JSON.parse(grammar.decode(out)) as Json;
        expect(validate(document), JSON.stringify(document)).toBe(true);
        if (typeof document === 'object' && document !== null && !Array.isArray(document)) {
          orders.add(Object.keys(document).join(','));
          documents.push(document);
        }
      } finally {
        matcher.dispose();
      }
    }
    return { finished, orders, documents };
  }

  it('random walks under the masks end in documents ajv accepts, in orders other than the schema’s, never in a mask that allows nothing', async () => {
    // Short values, so that walks of random tokens end.
    const schema = closed(
      {
        name: { type: 'string', maxLength: 2 },
        age: { type: 'integer', minimum: 0, maximum: 9 },
        'a"b': { type: 'boolean' },
        nick: { type: 'null' },
        inner: closed({ x: { type: 'boolean' }, xy: { type: 'null' } }, ['x']),
        list: { type: 'array', maxItems: 2, items: closed({ k: { enum: [1, 2] }, kk: { type: 'boolean' } }, ['k']) },
      },
      ['name', 'age'],
    );
    expect((await grammar.engine.compile({ kind: 'json_schema', schema: JSON.stringify(anyOrder(schema)) })).guard?.anyOrder.size).toBe(3);
    const { finished, orders } = await walks(schema, 7000);
    expect(finished).toBeGreaterThan(10);
    // Not vacuous: the walks wrote the required keys both ways round.
    const nameFirst = [...orders].some((o) => o.indexOf('name') < o.indexOf('age'));
    const ageFirst = [...orders].some((o) => o.indexOf('age') < o.indexOf('name'));
    expect(nameFirst && ageFirst, [...orders].join(' | ')).toBe(true);
  }, 120_000);

  it('random walks under oneOf over required and a dependency: valid, never stranded, the deciding key anywhere', async () => {
    const schema = {
      ...closed({ build: { type: 'null' }, image: { type: 'null' }, cmd: { type: 'null' }, port: { type: 'integer', minimum: 1, maximum: 9 } }),
      oneOf: [{ required: ['build'] }, { required: ['image'] }],
      dependentRequired: { port: ['cmd'] },
    };
    expect((await grammar.engine.compile({ kind: 'json_schema', schema: JSON.stringify(anyOrder(schema)) })).guard?.anyOrder.size).toBe(1);
    const { finished, orders } = await walks(schema, 9000);
    expect(finished).toBeGreaterThan(10);
    const deciderLast = [...orders].some((o) => o.split(',').length > 1 && /(build|image)$/.test(o));
    const deciderFirst = [...orders].some((o) => o.split(',').length > 1 && /^(build|image)/.test(o));
    expect(deciderLast && deciderFirst, [...orders].join(' | ')).toBe(true);
  }, 120_000);

  it('random walks beside patternProperties: valid, never stranded by named keys the patterns leave or pattern keys all written', async () => {
    // `xyz` leaves `^x-[ab]*$` after its x; `^[ab]?c$` has three keys, one of them named.
    const schema = {
      ...closed({ x: { type: 'null' }, xyz: { type: 'null' }, 'x-a': { type: 'null' }, ac: { type: 'null' } }),
      patternProperties: { '^x-[ab]*$': { type: 'null' }, '^[ab]?c$': { type: 'null' } },
    };
    expect((await grammar.engine.compile({ kind: 'json_schema', schema: JSON.stringify(anyOrder(schema)) })).guard?.anyOrder.size).toBe(1);
    const { finished, orders } = await walks(schema, 10_000);
    expect(finished).toBeGreaterThan(10);
    // Not vacuous: pattern keys beside named ones, before and after them.
    const keys = [...orders].flatMap((o) => o.split(','));
    expect(keys.some((k) => /^x-[ab]+$/.test(k) && k !== 'x-a') && keys.some((k) => k === 'bc' || k === 'c'), [...orders].join(' | ')).toBe(true);
  }, 120_000);

  it('random walks under a union sharing a key under different schemas, told apart by a required key: valid, never stranded', async () => {
    const schema = {
      oneOf: [
        closed({ kind: { const: 'a' }, x: { type: 'integer', minimum: 0, maximum: 9 }, n: { type: 'null' } }, ['kind', 'x']),
        closed({ kind: { enum: ['b', 'c'] }, x: { type: 'boolean' }, n: { type: 'null' } }, ['kind']),
      ],
    };
    expect((await grammar.engine.compile({ kind: 'json_schema', schema: JSON.stringify(anyOrder(schema)) })).guard?.anyOrder.size).toBe(2);
    const { finished, orders } = await walks(schema, 11_000);
    expect(finished).toBeGreaterThan(10);
    expect(
      [...orders].some((o) => o.split(',').length > 1 && o.endsWith('kind')),
      [...orders].join(' | '),
    ).toBe(true);
  }, 120_000);

  it('random walks under a union whose objects beneath differ, told apart by a required key: valid, items in any order after it', async () => {
    // Short values and an item in every document, so that walks of random tokens end and show the items' order.
    const item = (type: Json, required: string[]): Schema => ({ type: 'array', minItems: 1, maxItems: 1, items: closed({ id: { type: 'null' }, type }, required) });
    const schema = {
      oneOf: [
        closed({ kind: { const: 'tool' }, inputs: item({ enum: ['F', 'n'] }, ['id', 'type']) }, ['kind', 'inputs']),
        closed({ kind: { const: 'flow' }, inputs: item(closed({ k: { type: 'null' } }), ['id']) }, ['kind', 'inputs']),
      ],
    };
    const { finished, documents } = await walks(schema, 12_000);
    expect(finished).toBeGreaterThan(10);
    // Not vacuous: an item written in an order other than the schema's, after the deciding key.
    const reordered = documents.filter((d) => Object.keys(d)[0] === 'kind' && (d['inputs'] as Schema[] | undefined)?.some((item) => Object.keys(item).join(',') === 'type,id'));
    expect(reordered.length, documents.map((d) => JSON.stringify(d)).join(' | ')).toBeGreaterThan(0);
  }, 120_000);

  it('random walks under a union told apart by its constants: valid, the deciding key first or last', async () => {
    const schema = {
      oneOf: [
        closed({ kind: { const: 'a' }, x: { type: 'integer', minimum: 0, maximum: 9 }, n: { type: 'null' } }, ['kind', 'x']),
        closed({ kind: { enum: ['b', 'c'] }, y: { type: 'boolean' }, n: { type: 'null' } }, ['kind']),
      ],
    };
    expect((await grammar.engine.compile({ kind: 'json_schema', schema: JSON.stringify(anyOrder(schema)) })).guard?.anyOrder.size).toBe(2);
    const { finished, orders } = await walks(schema, 8000);
    expect(finished).toBeGreaterThan(10);
    const kindLast = [...orders].some((o) => o.split(',').length > 1 && o.endsWith('kind'));
    const kindFirst = [...orders].some((o) => o.split(',').length > 1 && o.startsWith('kind'));
    expect(kindLast && kindFirst, [...orders].join(' | ')).toBe(true);
  }, 120_000);
});

function allowedIds(mask: Int32Array): number[] {
  const ids: number[] = [];
  for (let w = 0; w < mask.length; w++) if (mask[w] !== 0) for (let b = 0; b < 32; b++) if ((mask[w]! >>> b) & 1) ids.push(w * 32 + b);
  return ids;
}
