import { describe, expect, it } from 'vitest';
import { decodeTree, fillDefaults, integerLiteral } from '../../../../src/repository/config/decode.js';
import { parseJsonConfig } from '../../../../src/repository/config/json-parser.js';
import { parseTextFormat } from '../../../../src/repository/config/text-parser.js';
import { enumType, mapOf, messageType, repeated, single } from '../../../../src/contracts/proto-schema.js';
import { expectError } from './helpers.js';

const COLOR = enumType('Color', ['RED', 'GREEN', 'BLUE']);
const INNER = messageType('Test.Inner', [single('v', 'int32'), single('s', 'string')]);
const TEST = messageType('Test', [
  single('s', 'string'),
  single('b', 'bool'),
  single('i32', 'int32'),
  single('u32', 'uint32'),
  single('i64', 'int64'),
  single('u64', 'uint64'),
  single('f', 'float'),
  single('d', 'double'),
  single('color', COLOR),
  single('inner', INNER),
  repeated('nums', 'int64'),
  repeated('items', INNER),
  repeated('colors', COLOR),
  mapOf('tags', 'string', 'string'),
  mapOf('byLevel', 'uint64', INNER),
  single('first', 'string', 'choice'),
  single('second', INNER, 'choice'),
  single('max_batch_size', 'int32'),
]);

const text = (src: string) => decodeTree(parseTextFormat(src, 'f'), TEST, 'f').value;
const json = (src: string) => decodeTree(parseJsonConfig(src, 'c'), TEST, 'c').value;

describe('schema decoding (text format)', () => {
  it('decodes each scalar type', () => {
    expect(text('s: "x" b: true i32: -7 u32: 0x10 i64: -9007199254740991 u64: 017 f: 1.5f d: -2e-3 color: BLUE')).toEqual({
      s: 'x',
      b: true,
      i32: -7,
      u32: 16,
      i64: -9007199254740991,
      u64: 15,
      f: 1.5,
      d: -0.002,
      color: 'BLUE',
    });
  });

  it('takes protobuf boolean spellings and enum numbers', () => {
    for (const [word, value] of [
      ['true', true],
      ['True', true],
      ['t', true],
      ['1', true],
      ['false', false],
      ['False', false],
      ['f', false],
      ['0', false],
    ] as const) {
      expect(text(`b: ${word}`).b).toBe(value);
    }
    expect(text('color: 1').color).toBe('GREEN');
  });

  it('takes integers, inf and nan for floats', () => {
    expect(text('f: 3 d: 0x10').f).toBe(3);
    expect(text('d: 0x10').d).toBe(16);
    expect(text('f: inf').f).toBe(Infinity);
    expect(text('f: -Infinity').f).toBe(-Infinity);
    expect(text('f: nan').f).toBeNaN();
  });

  it('concatenates repeated entries and lists in order', () => {
    expect(text('nums: 1 nums: [2, 3] nums: [] nums: -4')).toEqual({ nums: [1, 2, 3, -4] });
    expect(text('items { v: 1 } items [ { v: 2 }, { s: "z" } ]')).toEqual({ items: [{ v: 1 }, { v: 2 }, { s: 'z' }] });
    expect(text('colors: [RED, 2]')).toEqual({ colors: ['RED', 'BLUE'] });
  });

  it('reads maps as repeated key/value entries, in either form; the last key wins', () => {
    expect(text('tags: { key: "a" value: "1" } tags [ { key: "b" value: "2" }, { key: "a" value: "3" } ]')).toEqual({ tags: { a: '3', b: '2' } });
    expect(text('byLevel { key: 2 value { v: 5 } } byLevel { key: 0x1 }')).toEqual({ byLevel: { '2': { v: 5 }, '1': {} } });
    expect(text('tags { value: "v" }')).toEqual({ tags: { '': 'v' } });
  });

  it('records positions of fields, list elements and map entries', () => {
    const { value, positions } = decodeTree(parseTextFormat('nums: [1,\n 2]\ntags { key: "k" value: "v" }\ninner { v: 1 }', 'f'), TEST, 'f');
    expect(positions.get(value, 'nums')).toEqual({ line: 1, column: 1 });
    expect(positions.get(value, 'nums.1')).toEqual({ line: 2, column: 2 });
    expect(positions.get(value, 'tags.k')).toEqual({ line: 3, column: 6 });
    expect(positions.get(value.inner as object, 'v')).toEqual({ line: 4, column: 9 });
    expect(positions.get(value.inner as object, '')).toEqual({ line: 4, column: 7 });
  });

  describe('errors', () => {
    it('names an unknown field and its message type', () => {
      expectError(() => text('s: "x"\ninner { v: 1 bogus: 2 }'), "f:2:14: unknown field 'bogus' in Test.Inner");
      expectError(() => text('maxBatchSize: 1'), "f:1:1: unknown field 'maxBatchSize' in Test");
    });

    it('refuses a singular field set twice, and two members of a oneof', () => {
      expectError(() => text('s: "a"\ns: "b"'), "f:2:1: field 's' is set more than once (first at 1:1)");
      expectError(() => text('inner { v: 1 } inner { v: 2 }'), "f:1:16: field 'inner' is set more than once (first at 1:1)");
      expectError(() => text('first: "a"\nsecond {}'), "f:2:1: field 'second' cannot be set together with 'first' (at 1:1): both belong to oneof 'choice'");
      expectError(() => text('s: ["a"]'), "f:1:1: field 's' is not repeated and cannot take a list");
    });

    it('refuses values of the wrong type at the value', () => {
      expectError(() => text('s: 5'), "f:1:4: field 's' needs a string, found number 5");
      expectError(() => text('s: abc'), "f:1:4: field 's' needs a string, found identifier abc");
      expectError(() => text('i32: "5"'), `f:1:6: field 'i32' needs an integer, found string "5"`);
      expectError(() => text('i32: 1.5'), "f:1:6: field 'i32' needs an integer, found number 1.5");
      expectError(() => text('b: yes'), "f:1:4: field 'b' needs true or false, found identifier yes");
      expectError(() => text('b: 2'), "f:1:4: field 'b' needs true or false, found number 2");
      expectError(() => text('f: "1"'), `f:1:4: field 'f' needs a number, found string "1"`);
      expectError(() => text('f: NOPE'), "f:1:4: field 'f' needs a number, found identifier NOPE");
      expectError(() => text('inner: 5'), "f:1:8: field 'inner' needs a message ({ … }), found number 5");
      expectError(() => text('items: [1]'), "f:1:9: field 'items' needs a message ({ … }), found number 1");
      expectError(() => text('color: "RED"'), `f:1:8: field 'color' needs a Color value, found string "RED"`);
      expectError(() => text('color: -1'), "f:1:8: field 'color' needs a Color value, found number -1");
      expectError(() => text('tags: "x"'), `f:1:7: map field 'tags' needs entries like { key: … value: … }, found string "x"`);
      expectError(() => text('tags { key: "a" other: 1 }'), "f:1:17: unknown field 'other' in tags entry");
    });

    it('names the enum and its values for an unknown enum value', () => {
      expectError(() => text('color: PURPLE'), "f:1:8: unknown Color value 'PURPLE' for field 'color' (expected one of RED, GREEN, BLUE)");
      expectError(() => text('color: 3'), "f:1:8: unknown Color number 3 for field 'color'");
    });

    it('checks integer ranges per type', () => {
      expectError(() => text('i32: 2147483648'), "f:1:6: field 'i32' is int32 and cannot hold 2147483648");
      expectError(() => text('i32: -2147483649'), "f:1:6: field 'i32' is int32 and cannot hold -2147483649");
      expect(text('i32: -2147483648 u32: 4294967295')).toEqual({ i32: -2147483648, u32: 4294967295 });
      expectError(() => text('u32: -1'), "f:1:6: field 'u32' needs a non-negative integer, found -1");
      expectError(() => text('u64: -1'), "f:1:6: field 'u64' needs a non-negative integer, found -1");
      expectError(() => text('u32: 4294967296'), "f:1:6: field 'u32' is uint32 and cannot hold 4294967296");
      expectError(() => text('i64: 9007199254740992'), "f:1:6: integer 9007199254740992 for field 'i64' is beyond what Conveyor represents exactly (±9007199254740991)");
      expectError(() => text('u64: 0xFFFFFFFFFFFFFFFFF'), "f:1:6: field 'u64' is uint64 and cannot hold 295147905179352825855");
    });
  });
});

describe('schema decoding (JSON)', () => {
  it('takes proto names and lowerCamelCase JSON names, quoted 64-bit integers, enum names and numbers', () => {
    expect(json('{"maxBatchSize": 4, "i64": "-12", "u64": 1e3, "color": "GREEN", "colors": [0, "BLUE"], "b": false}')).toEqual({
      max_batch_size: 4,
      i64: -12,
      u64: 1000,
      color: 'GREEN',
      colors: ['RED', 'BLUE'],
      b: false,
    });
  });

  it('reads maps as objects, with integer-string keys for uint64 maps', () => {
    expect(json('{"tags": {"a": "1", "b": "2"}, "byLevel": {"3": {"v": 1}}}')).toEqual({ tags: { a: '1', b: '2' }, byLevel: { '3': { v: 1 } } });
    expectError(() => json('{"byLevel": {"x": {}}}'), `c:1:14: map field 'byLevel' needs non-negative integer keys, found "x"`);
    expectError(() => json('{"tags": ["a"]}'), "c:1:2: map field 'tags' needs a JSON object");
    expectError(() => json('{"tags": {"a": ["b"]}}'), `c:1:11: map field 'tags' cannot hold a list under key "a"`);
  });

  it('takes floats as numbers or NaN/Infinity strings', () => {
    expect(json('{"f": "NaN", "d": "-Infinity"}')).toEqual({ f: NaN, d: -Infinity });
    expect(json('{"f": "1.25"}')).toEqual({ f: 1.25 });
    expectError(() => json('{"f": "abc"}'), `c:1:7: field 'f' needs a number, found string "abc"`);
  });

  it('is stricter than text format where JSON is', () => {
    expectError(() => json('{"nums": 5}'), "c:1:2: field 'nums' is repeated and needs a JSON array");
    expectError(() => json('{"b": 1}'), "c:1:7: field 'b' needs true or false, found number 1");
    expectError(() => json('{"i32": 1.5}'), "c:1:9: field 'i32' needs an integer, found number 1.5");
    expectError(() => json('{"s": "a", "s": "b"}'), "c:1:12: field 's' is set more than once (first at 1:2)");
    expectError(() => json('{"max_batch_size": 1, "maxBatchSize": 2}'), "c:1:23: field 'max_batch_size' is set more than once (first at 1:2)");
  });
});

describe('fillDefaults', () => {
  it('fills unset scalars, lists and maps, recursing into set messages only, and skips oneof members', () => {
    const value = fillDefaults(text('inner { v: 2 } items { }'), TEST, ['max_batch_size']);
    expect(value).toEqual({
      s: '',
      b: false,
      i32: 0,
      u32: 0,
      i64: 0,
      u64: 0,
      f: 0,
      d: 0,
      color: 'RED',
      inner: { v: 2, s: '' },
      nums: [],
      items: [{ v: 0, s: '' }],
      colors: [],
      tags: {},
      byLevel: {},
    });
  });
});

describe('integerLiteral', () => {
  it('reads protobuf integer spellings', () => {
    expect([integerLiteral('0', false), integerLiteral('10', true), integerLiteral('0x1f', false), integerLiteral('010', false)]).toEqual([0n, -10n, 31n, 8n]);
  });
});
