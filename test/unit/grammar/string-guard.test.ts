// String lengths and string items that must differ, left to the string guard (json-schema/guard-plan.ts plans where they apply,
// string-guard.ts counts and compares beside xgrammar): the plan's refusals where the text cannot tell
// which bound holds, the cursor's counting byte by byte, and through the real Qwen3 vocabulary
// the masks against ajv — hand-picked schemas at every bound, seeded random schemas and
// instances, and random walks whose every finished output ajv must accept.
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { maskAllows } from '../../../src/contracts/token-mask.js';
import type { GrammarEngine } from '../../../src/grammar/grammar-engine.js';
import { GUARDED_LENGTH_ABOVE, guardPlan } from '../../../src/grammar/json-schema/guard-plan.js';
import { type GuardPlan, ROOT, UNBOUNDED } from '../../../src/grammar/json-schema/guard-places.js';
import { GuardCursor } from '../../../src/grammar/string-guard.js';
import { PatternAutomaton } from '../../../src/grammar/pattern-automaton.js';
import { schemaGrammarPlan } from '../../../src/grammar/schema-grammar.js';
import { openQwen3Grammar, QWEN3_STOP, type Qwen3Grammar } from '../../support/qwen3-grammar.js';
import { seededRandom as rng } from '../../support/seeded-random.js';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

const STOP = QWEN3_STOP;
const ajv = new Ajv2020({ strict: false });
addFormats.default(ajv);
const plan = (schema: Json, legacy = false): GuardPlan | null => guardPlan(schema, legacy, 'forbid');
const text = new TextEncoder();

describe('length plan', () => {
  it('places a bounded string by key, item and reference, and none where nothing is bounded', () => {
    const tree = {
      $defs: { node: { type: 'object', properties: { name: { type: 'string', maxLength: 100 }, children: { type: 'array', items: { $ref: '#/$defs/node' } } } } },
      $ref: '#/$defs/node',
    };
    const p = plan(tree)!;
    const root = p.places[ROOT]!;
    expect(p.places[root.keys.get('name')!]!.string).toMatchObject({ min: 0, max: 100 });
    const child = p.places[p.places[root.keys.get('children')!]!.restItems]!;
    expect(p.places[child.keys.get('name')!]!.string).toMatchObject({ min: 0, max: 100 });
    expect(plan({ type: 'object', properties: { a: { type: 'string', maxLength: GUARDED_LENGTH_ABOVE } } })).toBeNull();
    expect(plan({ type: 'string' })).toBeNull();
  });

  it('folds allOf into one bound, and a nullable string keeps its bound', () => {
    expect(plan({ allOf: [{ maxLength: 500 }, { minLength: 3 }], type: 'string' })!.places[ROOT]!.string).toMatchObject({ min: 3, max: 500 });
    expect(plan({ anyOf: [{ type: 'string', maxLength: 500 }, { type: 'null' }] })!.places[ROOT]!.string).toMatchObject({ min: 0, max: 500 });
    expect(plan({ type: ['string', 'null'], minLength: 20 })!.places[ROOT]!.string).toMatchObject({ min: 20, max: null });
  });

  it('reads prefixItems before items, and draft 4 tuple items before additionalItems', () => {
    const p = plan({ type: 'array', prefixItems: [{ type: 'string', maxLength: 50 }], items: { type: 'string', minLength: 30 } })!;
    expect(p.places[p.places[ROOT]!.items[0]!]!.string).toMatchObject({ min: 0, max: 50 });
    expect(p.places[p.places[ROOT]!.restItems]!.string).toMatchObject({ min: 30, max: null });
    const legacy = plan({ $schema: 'http://json-schema.org/draft-04/schema#', type: 'array', items: [{ type: 'integer' }], additionalItems: { maxLength: 40 } }, true)!;
    expect(legacy.places[ROOT]!.items[0]).toBe(UNBOUNDED);
    expect(legacy.places[legacy.places[ROOT]!.restItems]!.string).toMatchObject({ min: 0, max: 40 });
  });

  it('leads an unnamed key by the patterns it matches: their schemas, else additionalProperties', () => {
    const p = plan({ type: 'object', patternProperties: { '^x': { type: 'string' } }, additionalProperties: { type: 'string', maxLength: 100 } })!;
    const { tests, places } = p.places[ROOT]!.patternKeys!;
    const placeOf = (key: string): number => places[tests.reduce((bits, test, i) => bits | (test.test(key) ? 1 << i : 0), 0)]!;
    expect(placeOf('xa')).toBe(UNBOUNDED);
    expect(p.places[placeOf('ya')]!.string).toMatchObject({ min: 0, max: 100 });
  });

  it('marks arrays of strings that must differ, and keeps the grammar for uniqueItems over other items', () => {
    const p = plan({ type: 'object', properties: { tags: { type: 'array', items: { type: 'string' }, uniqueItems: true } } })!;
    expect(p.guardsUnique).toBe(true);
    expect(p.places[p.places[ROOT]!.keys.get('tags')!]!.unique).toBe(true);
    // Numbers are compared by value (1 = 1.0): not a string comparison, so not planned; lengths alone still are.
    const numbers = plan({ type: 'object', properties: { n: { type: 'array', items: { type: 'integer' }, uniqueItems: true }, s: { type: 'string', maxLength: 100 } } })!;
    expect(numbers.guardsUnique).toBe(false);
    expect(numbers.places[numbers.places[ROOT]!.keys.get('s')!]!.string).toMatchObject({ max: 100 });
  });

  it('refuses a plan where the text cannot tell which bound holds', () => {
    // The branch is chosen by `kind`, written after `text` could be.
    const discriminated = {
      anyOf: [
        { type: 'object', properties: { text: { type: 'string', maxLength: 10 }, kind: { const: 'short' } } },
        { type: 'object', properties: { text: { type: 'string', maxLength: 5000 }, kind: { const: 'long' } } },
      ],
    };
    expect(plan(discriminated)).toBeNull();
    // A bounded string beside a pattern, or one unbounded, at the same place.
    expect(
      plan({
        anyOf: [
          { type: 'string', maxLength: 100 },
          { type: 'string', pattern: '^a' },
        ],
      }),
    ).toBeNull();
    expect(plan({ anyOf: [{ type: 'string', maxLength: 100 }, { type: 'string' }] })).toBeNull();
    // A dependent schema that bounds a property only when another key is present.
    expect(plan({ type: 'object', properties: { a: { type: 'string', maxLength: 100 } }, dependentSchemas: { b: { properties: { a: { minLength: 5 } } } } })).toBeNull();
    // More patternProperties patterns beside bounded values than a key is tested against.
    const patterns = Object.fromEntries(Array.from({ length: 5 }, (_, i) => [`^${i}`, { type: 'string', maxLength: 100 }]));
    expect(plan({ type: 'object', patternProperties: patterns, additionalProperties: false })).toBeNull();
  });

  it('the translation writes any string only where the plan guards, and keeps counting where it does not', () => {
    const guarded = schemaGrammarPlan({ type: 'string', maxLength: 5000 }, { absentAdditionalProperties: 'forbid', guardStrings: true });
    expect(guarded.guard).not.toBeNull();
    expect(guarded.text).not.toContain('string_len');
    const counted = schemaGrammarPlan(
      {
        anyOf: [
          { type: 'string', maxLength: 20 },
          { type: 'string', pattern: '^a' },
        ],
      },
      { absentAdditionalProperties: 'forbid', guardStrings: true },
    );
    expect(counted.guard).toBeNull();
    expect(counted.text).toContain('string_len');
    // Without the option (tool calls, whose grammar the guard does not follow from its first byte): counted.
    expect(schemaGrammarPlan({ type: 'string', maxLength: 20 }, { absentAdditionalProperties: 'forbid' }).guard).toBeNull();
  });
});

describe('PatternAutomaton', () => {
  it('knows the lengths a pattern can still end at from each state', () => {
    const nine = PatternAutomaton.of(['^[0-9]{9}$'])!;
    expect([8, 9, 10].map((max) => nine.canFinish(0, 0, 0, max))).toEqual([false, true, true]);
    expect(nine.canFinish(0, 0, 10, null)).toBe(false);
    const words = PatternAutomaton.of(['^([a-z0-9-]+):([a-z0-9.-]+):([a-z0-9-]+)?:([a-z0-9-]+)$'])!;
    expect(words.dist[0]).toBe(6);
    expect(words.gapped).toBe(false);
    // "/" alone is a match and nothing follows it: a gap between 0 and any longer length.
    const path = PatternAutomaton.of(['^([\\w\\/-]|[\\w-][\\w\\/-]*[\\w-])$'])!;
    const afterSlash = path.next(0, 0x2f);
    expect([path.canFinish(afterSlash, 1, 0, 10), path.canFinish(afterSlash, 1, 2, 10)]).toEqual([true, false]);
    // Lengths that alternate forever never settle: the counted grammar keeps those.
    expect(PatternAutomaton.of(['^(ab)+$'])).toBeNull();
  });
});

describe('GuardCursor', () => {
  const p = plan({
    type: 'object',
    properties: { 'k"ey': { type: 'string', minLength: 10, maxLength: 12 }, list: { type: 'array', items: { type: 'string', maxLength: 9 } } },
  })!;
  const walk = (...chunks: string[]): GuardCursor | null => {
    let cursor: GuardCursor | null = GuardCursor.start(p);
    for (const chunk of chunks) cursor = cursor?.advance(p, text.encode(chunk)) ?? null;
    return cursor;
  };

  it('counts code points: a multi-byte character, an escape and a \\u escape are one each', () => {
    expect(walk('{"k\\"ey": "', 'é🙂中\\n\\u00e9abcde', 'fg"}')).not.toBeNull(); // 12
    expect(walk('{"k\\"ey": "', 'é🙂中\\n\\u00e9abcde', 'fgh')).toBeNull(); // 13
    // The bytes of one character split across tokens count once.
    const emoji = text.encode('🙂');
    let cursor: GuardCursor | null = walk('{"k\\"ey": "', 'abcdefghijk');
    for (const byte of emoji) cursor = cursor?.advance(p, Uint8Array.of(byte)) ?? null;
    expect(cursor?.advance(p, text.encode('"'))).not.toBeNull();
  });

  it('refuses closing before the minimum, and an escape past the maximum', () => {
    expect(walk('{"k\\"ey": "abcdefghi"')).toBeNull();
    expect(walk('{"k\\"ey": "abcdefghij"')).not.toBeNull();
    expect(walk('{"k\\"ey": "abcdefghijkl\\')).toBeNull();
  });

  it('follows items and keys: every item of the list is bounded, an escaped quote does not end a string', () => {
    expect(walk('{"list": ["abcdefghi", "\\"bcdefghi", "abc"]}')).not.toBeNull();
    expect(walk('{"list": ["abc", "abcdefghij"')).toBeNull();
    // The key "k\"ey" read through its escape: its bound applies after it, not the list's.
    expect(walk('{"list": [], "k\\"ey": "abcdefghijkl"}')).not.toBeNull();
  });
});

describe('with the Qwen3 vocabulary', () => {
  let grammar: Qwen3Grammar;
  let engine: GrammarEngine;
  let decodeIds: (ids: number[]) => string;
  let planned = 0;

  beforeAll(async () => {
    grammar = await openQwen3Grammar();
    engine = grammar.engine;
    decodeIds = grammar.decode;
  }, 120_000);
  afterAll(async () => engine?.dispose());

  const masksAccept = (schema: Json, instance: Json): Promise<boolean> =>
    grammar.masksAccept(schema, instance, (constraint) => {
      if (constraint.guard !== null) planned++;
    });

  it.each<[string, Json, Json[], Json[]]>([
    ['maxLength 5000 (past the counted grammar)', { type: 'string', maxLength: 5000 }, ['', 'x'.repeat(5000), `${'é'.repeat(4999)}🙂`], ['x'.repeat(5001), `${'é'.repeat(5000)}"`]],
    ['minLength 300', { type: 'string', minLength: 300 }, ['ab'.repeat(150), `${'a'.repeat(299)}\n`], ['a'.repeat(299), '']],
    [
      'bounded values, keys and items in an object',
      {
        type: 'object',
        properties: { id: { type: 'string', minLength: 12, maxLength: 12 }, tags: { type: 'array', items: { type: 'string', maxLength: 10 } }, note: { type: ['string', 'null'], maxLength: 40 } },
        required: ['id'],
        additionalProperties: false,
      },
      [
        { id: 'abcdefghijkl', tags: ['a', 'abcdefghi"'], note: null },
        { id: '"\\\n\ta\u00e9🙂中bcde', note: 'n'.repeat(40) },
      ],
      [{ id: 'abcdefghijk' }, { id: 'abcdefghijklm' }, { id: 'abcdefghijkl', tags: ['abcdefghijk'] }, { id: 'abcdefghijkl', note: 'n'.repeat(41) }],
    ],
    [
      'a recursive tree of bounded names',
      {
        $defs: {
          node: {
            type: 'object',
            properties: { name: { type: 'string', minLength: 10, maxLength: 20 }, kids: { type: 'array', items: { $ref: '#/$defs/node' } } },
            required: ['name'],
            additionalProperties: false,
          },
        },
        $ref: '#/$defs/node',
      },
      [{ name: 'rootrootro', kids: [{ name: 'childchildchild', kids: [{ name: 'g'.repeat(20) }] }] }],
      [
        { name: 'rootrootro', kids: [{ name: 'short' }] },
        { name: 'rootrootro', kids: [{ name: 'c', kids: [{ name: 'g'.repeat(21) }] }] },
      ],
    ],
    [
      // JSONSchemaBench Github_easy o9861: the tags' keys are patternProperties keys, tested by the guard as they close.
      'bounded values under patternProperties keys, beside a named key',
      {
        type: 'object',
        properties: {
          comment: { type: 'string', maxLength: 32767 },
          tags: { type: 'object', patternProperties: { '^[0-9a-zA-Z_-]{1,255}$': { type: 'string', minLength: 1, maxLength: 255 } }, additionalProperties: false },
        },
        additionalProperties: false,
      },
      [{ comment: 'c'.repeat(2000), tags: { a: 'x', b_2: 't'.repeat(255) } }, { tags: {} }],
      [{ tags: { a: '' } }, { tags: { a: 't'.repeat(256) } }, { tags: { 'a b': 'x' } }],
    ],
    [
      'string items that must differ (uniqueItems), beside bounded ones',
      { type: 'object', properties: { tags: { type: 'array', items: { type: 'string', maxLength: 20 }, uniqueItems: true, minItems: 2 } }, required: ['tags'], additionalProperties: false },
      [{ tags: ['a', 'b'] }, { tags: ['é', 'e', 'ab', 'a', 'b"'] }, { tags: ['', 'x'.repeat(20)] }],
      [{ tags: ['a', 'a'] }, { tags: ['a', 'b', 'a'] }, { tags: ['é', 'é'] }, { tags: ['a'] }, { tags: ['a', 'x'.repeat(21)] }],
    ],
    ['allOf bounds folded', { allOf: [{ type: 'string', maxLength: 30 }, { minLength: 15 }] }, ['a'.repeat(15), 'a'.repeat(30)], ['a'.repeat(14), 'a'.repeat(31)]],
    // JSONSchemaBench's most common pattern-and-length pairs.
    ['pattern and maxLength 255', { type: 'string', pattern: '^[A-Za-z0-9:_\\-]+$', maxLength: 255 }, ['a', 'a:b_c-D'.repeat(36).slice(0, 255)], ['a'.repeat(256), '', 'a b']],
    [
      'a structured pattern near its bound',
      { type: 'string', pattern: '^([a-z0-9-]+):([a-z0-9\\.-]+):([a-z0-9-]+)?:([a-z0-9-]+)$', minLength: 10, maxLength: 146 },
      ['aws:s3::bucket', `${'a'.repeat(140)}:b::c`, 'a:b:c:defg'],
      [`${'a'.repeat(142)}:b::c`, 'a:b::c', 'a:b:c'],
    ],
    ['format and maxLength', { type: 'string', format: 'email', maxLength: 20 }, ['ab@example.com', `${'a'.repeat(8)}@example.com`], [`${'a'.repeat(9)}@example.com`, 'ab']],
    ['a fixed-width pattern with lengths it already meets', { type: 'string', pattern: '^[0-9]{9}$', minLength: 9, maxLength: 20 }, ['123456789'], ['12345678', '1234567890']],
    // A pattern's count is a length the guard holds; the grammar writes the count open (string-lengths.ts).
    ['a pattern counting one character set', { type: 'string', pattern: '^[-0-9A-Za-z_]{1,255}$' }, ['a', 'A-_9'.repeat(63).slice(0, 255)], ['', 'a'.repeat(256), 'a b', 'é']],
    ['a counted pattern between fixed parts', { type: 'string', pattern: '^v[0-9]{2,12}\\.x$' }, ['v12.x', `v${'9'.repeat(12)}.x`], ['v1.x', `v${'9'.repeat(13)}.x`, 'v12.y', 'v12x.x']],
    ['a counted pattern beside a tighter maxLength', { type: 'string', pattern: '^[a-z]{3,100}$', maxLength: 20 }, ['abc', 'a'.repeat(20)], ['ab', 'a'.repeat(21), 'a'.repeat(100)]],
  ])('%s: valid instances pass the masks, invalid ones do not (ajv agrees)', async (_, schema, valid, invalid) => {
    const validate = ajv.compile(schema as object);
    for (const value of valid) {
      expect(validate(value), JSON.stringify(value)).toBe(true);
      expect(await masksAccept(schema, value), JSON.stringify(value)).toBe(true);
    }
    for (const value of invalid) {
      expect(validate(value), JSON.stringify(value)).toBe(false);
      expect(await masksAccept(schema, value), JSON.stringify(value)).toBe(false);
    }
  });

  it('seeded random schemas and instances at the bounds: the masks agree with ajv on every one', async () => {
    const random = rng(37);
    const pickOf = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
    const bound = (): number => pickOf([0, 1, 3, 9, 10, 16, 40, 200]);
    const stringSchema = (): Record<string, Json> => {
      const a = bound();
      const b = bound();
      const s: Record<string, Json> = { type: 'string' };
      if (random() < 0.8) s['maxLength'] = Math.max(a, b);
      if (random() < 0.5) s['minLength'] = Math.min(a, b);
      return s;
    };
    const valueSchema = (depth: number): Record<string, Json> => {
      const r = random();
      if (depth > 1 || r < 0.45) return stringSchema();
      if (r < 0.6) return { anyOf: [stringSchema(), { type: 'null' }] };
      if (r < 0.7) {
        const most = bound() + 9;
        return { allOf: [{ type: 'string', maxLength: most }, { minLength: Math.min(bound(), most) }] };
      }
      if (r < 0.85) return { type: 'array', items: valueSchema(depth + 1), maxItems: 3 };
      return objectSchema(depth + 1);
    };
    const objectSchema = (depth: number): Record<string, Json> => {
      const names = ['a', 'b"', 'é'].slice(0, 1 + Math.floor(random() * 3));
      return { type: 'object', properties: Object.fromEntries(names.map((n) => [n, valueSchema(depth)])), required: names, additionalProperties: false };
    };
    const pool = ['a', 'é', '🙂', '\n', '"', '\\', '中', ' ', 'xyz'];
    const stringNear = (s: Record<string, Json>): string => {
      const targets = [s['minLength'], s['maxLength']].filter((n): n is number => typeof n === 'number');
      const target = Math.max(0, (targets.length > 0 ? pickOf(targets) : 5) + pickOf([-1, 0, 0, 1]));
      let out = '';
      while ([...out].length < target) out += pickOf(pool);
      return [...out].slice(0, target).join('');
    };
    const instance = (s: Record<string, Json>): Json => {
      if (s['anyOf']) return random() < 0.3 ? null : instance((s['anyOf'] as Record<string, Json>[])[0]!);
      if (s['allOf']) {
        const [first, second] = s['allOf'] as Record<string, Json>[];
        return stringNear(random() < 0.5 ? first! : second!);
      }
      if (s['type'] === 'array') return Array.from({ length: Math.floor(random() * 3) }, () => instance(s['items'] as Record<string, Json>));
      if (s['type'] === 'object') return Object.fromEntries(Object.entries(s['properties'] as Record<string, Record<string, Json>>).map(([k, v]) => [k, instance(v)]));
      return stringNear(s);
    };
    let valid = 0;
    let invalid = 0;
    for (let i = 0; i < 40; i++) {
      const schema = objectSchema(0);
      const validate = ajv.compile(schema);
      for (let j = 0; j < 6; j++) {
        const value = instance(schema);
        const expected = validate(value);
        expected ? valid++ : invalid++;
        expect(await masksAccept(schema, value), `${JSON.stringify(schema)}\n${JSON.stringify(value)}`).toBe(expected);
      }
    }
    // Not vacuous: both outcomes occur, and most schemas went through the guard.
    expect(valid).toBeGreaterThan(40);
    expect(invalid).toBeGreaterThan(40);
    expect(planned).toBeGreaterThan(100);
  }, 120_000);

  it.each<[string, Json]>([
    [
      'bounded strings',
      {
        type: 'object',
        properties: { code: { type: 'string', minLength: 10, maxLength: 12 }, words: { type: 'array', items: { type: 'string', minLength: 9, maxLength: 14 }, maxItems: 2 } },
        required: ['code', 'words'],
        additionalProperties: false,
      },
    ],
    ['short strings that must differ', { type: 'array', items: { type: 'string', maxLength: 1 }, uniqueItems: true, minItems: 3, maxItems: 4 }],
    [
      'bounded strings beside patterns whose lengths have gaps',
      {
        type: 'object',
        properties: {
          path: { type: 'string', pattern: '^([\\w\\/-]|[\\w-][\\w\\/-]*[\\w-])$', minLength: 10, maxLength: 12 },
          pair: { type: 'string', pattern: '^[a-z]+:[0-9]{2}$', minLength: 9, maxLength: 11 },
        },
        required: ['path', 'pair'],
        additionalProperties: false,
      },
    ],
  ])(
    'random walks under the masks (%s) end in documents ajv accepts, never in a mask that allows nothing',
    async (_, schema) => {
      const validate = ajv.compile(schema as object);
      const constraint = await engine.compile({ kind: 'json_schema', schema: JSON.stringify(schema) });
      expect(constraint.guard).not.toBeNull();
      let finished = 0;
      for (let seed = 0; seed < 30; seed++) {
        const random = rng(1000 + seed);
        const matcher = await engine.matcher(constraint, [STOP]);
        const out: number[] = [];
        try {
          while (out.length < 120 && !matcher.isTerminated()) {
            const mask = await matcher.nextTokenMask();
            expect(
              mask.some((word) => word !== 0),
              `seed ${seed} after ${out.length} tokens`,
            ).toBe(true);
            // Short tokens most of the time, so strings reach their bounds within the cap.
            const short = [...SHORT_IDS, STOP].filter((id) => maskAllows(mask, id));
            const id = short.length > 0 && random() < 0.85 ? short[Math.floor(random() * short.length)]! : anyAllowed(mask, random);
            expect(matcher.accept(id)).toBe(true);
            if (id !== STOP) out.push(id);
          }
          if (!matcher.isTerminated()) continue;
          finished++;
          const document = JSON.parse(decodeIds(out));
          expect(validate(document), JSON.stringify(document)).toBe(true);
        } finally {
          matcher.dispose();
        }
      }
      expect(finished).toBeGreaterThan(10);
    },
    120_000,
  );
});

/** Byte-level single-byte tokens of Qwen3's vocabulary. */
const SHORT_IDS = Array.from({ length: 256 }, (_, id) => id);

/** A uniformly random allowed id: probed at random, else listed. */
function anyAllowed(mask: Int32Array, random: () => number): number {
  for (let tries = 0; tries < 64; tries++) {
    const id = Math.floor(random() * mask.length * 32);
    if (maskAllows(mask, id)) return id;
  }
  const ids: number[] = [];
  for (let w = 0; w < mask.length; w++) if (mask[w] !== 0) for (let b = 0; b < 32; b++) if ((mask[w]! >>> b) & 1) ids.push(w * 32 + b);
  return ids[Math.floor(random() * ids.length)]!;
}
