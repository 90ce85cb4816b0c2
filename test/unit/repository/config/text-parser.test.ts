import { describe, expect, it } from 'vitest';
import type { FieldNode, MessageNode, ValueNode } from '../../../../src/repository/config/ast.js';
import { parseTextFormat } from '../../../../src/repository/config/text-parser.js';
import { expectError } from './helpers.js';

/** The tree without positions, for structural comparisons. */
function shape(node: ValueNode): unknown {
  switch (node.kind) {
    case 'message':
      return node.fields.map((f) => fieldShape(f));
    case 'string':
      return { s: node.value };
    case 'number':
      return { n: `${node.negative ? '-' : ''}${node.text}`, int: node.integer };
    case 'identifier':
      return { id: `${node.negative ? '-' : ''}${node.name}` };
  }
}
const fieldShape = (f: FieldNode) => [f.name, f.list ? f.values.map(shape) : shape(f.values[0]!), ...(f.list ? ['list'] : [])];
const parse = (src: string) => shape(parseTextFormat(src, 'config.pbtxt'));

describe('text-format parser', () => {
  it('reads scalar fields with a colon', () => {
    expect(parse('name: "m" max_batch_size: 8 kind: KIND_CPU ratio: 0.5 on: true')).toEqual([
      ['name', { s: 'm' }],
      ['max_batch_size', { n: '8', int: true }],
      ['kind', { id: 'KIND_CPU' }],
      ['ratio', { n: '0.5', int: false }],
      ['on', { id: 'true' }],
    ]);
  });

  it('reads messages with and without a colon, in {} or <>', () => {
    expect(parse('a { x: 1 } b: { y: 2 } c < z: 3 > d: <>')).toEqual([
      ['a', [['x', { n: '1', int: true }]]],
      ['b', [['y', { n: '2', int: true }]]],
      ['c', [['z', { n: '3', int: true }]]],
      ['d', []],
    ]);
  });

  it('reads lists of scalars and of messages, empty lists, and repeated entries', () => {
    expect(parse('dims: [ 1, -1 ] input [ { n: 1 }, < n: 2 > ] none: [] input { n: 3 }')).toEqual([
      [
        'dims',
        [
          { n: '1', int: true },
          { n: '-1', int: true },
        ],
        'list',
      ],
      ['input', [[['n', { n: '1', int: true }]], [['n', { n: '2', int: true }]]], 'list'],
      ['none', [], 'list'],
      ['input', [['n', { n: '3', int: true }]]],
    ]);
  });

  it('takes , and ; as optional field separators', () => {
    expect(parse('a: 1, b: 2; c { d: 3; }, e: 4')).toEqual([
      ['a', { n: '1', int: true }],
      ['b', { n: '2', int: true }],
      ['c', [['d', { n: '3', int: true }]]],
      ['e', { n: '4', int: true }],
    ]);
  });

  it('joins adjacent string literals of either quote kind', () => {
    expect(parse(`s: "ab" 'cd'\n  "ef"`)).toEqual([['s', { s: 'abcdef' }]]);
  });

  it('reads signs on numbers and on inf/nan, with space after the sign', () => {
    expect(parse('a: -5 b: - 0x10 c: -1.5e2 d: -inf e: -NaN f: inf')).toEqual([
      ['a', { n: '-5', int: true }],
      ['b', { n: '-0x10', int: true }],
      ['c', { n: '-1.5e2', int: false }],
      ['d', { id: '-inf' }],
      ['e', { id: '-NaN' }],
      ['f', { id: 'inf' }],
    ]);
  });

  it('reads an empty document and one of only comments', () => {
    expect(parse('')).toEqual([]);
    expect(parse('# nothing\n   # here\n')).toEqual([]);
  });

  it('records the position of every field name and value', () => {
    const root = parseTextFormat('name: "m"\ninput [\n  {\n    dims: [ 1, 2 ]\n  }\n]\n', 'f');
    expect(root.pos).toEqual({ line: 1, column: 1 });
    const input = root.fields[1]!;
    expect(input.pos).toEqual({ line: 2, column: 1 });
    const element = input.values[0] as MessageNode;
    expect(element.pos).toEqual({ line: 3, column: 3 });
    const dims = element.fields[0]!;
    expect(dims.pos).toEqual({ line: 4, column: 5 });
    expect(dims.values.map((v) => v.pos)).toEqual([
      { line: 4, column: 13 },
      { line: 4, column: 16 },
    ]);
    expect(root.fields[0]!.values[0]!.pos).toEqual({ line: 1, column: 7 });
  });

  describe('errors name file, line and column', () => {
    it('an unclosed message', () => {
      expectError(() => parseTextFormat('input {\n  name: "x"\n', 'config.pbtxt'), "config.pbtxt:3:1: expected '}' to close the message opened at 1:7, found end of input");
    });

    it('a mismatched closing brace', () => {
      expectError(() => parseTextFormat('a {\n  b < c: 1 }\n}', 'config.pbtxt'), "config.pbtxt:2:12: expected '>' to close the message opened at 2:5, found '}'");
      expectError(() => parseTextFormat('a: 1\n}', 'config.pbtxt'), "config.pbtxt:2:1: unexpected '}' outside any message");
    });

    it('a missing colon before a scalar', () => {
      expectError(() => parseTextFormat('name "x"', 'config.pbtxt'), `config.pbtxt:1:6: expected ':' or '{' after field name 'name', found string "x"`);
      expectError(() => parseTextFormat('dims [ 1 ]', 'config.pbtxt'), "config.pbtxt:1:8: expected '{' in the list of field 'dims' (a list of scalars needs ':' after the field name), found '1'");
    });

    it('a missing value or field name', () => {
      expectError(() => parseTextFormat('name:', 'f'), "f:1:6: expected a value for field 'name', found end of input");
      expectError(() => parseTextFormat('name: :', 'f'), "f:1:7: expected a value for field 'name', found ':'");
      expectError(() => parseTextFormat('a { 5 }', 'f'), "f:1:5: expected a field name or '}', found '5'");
      expectError(() => parseTextFormat('"x": 1', 'f'), 'f:1:1: expected a field name, found string "x"');
    });

    it('a bad list', () => {
      expectError(() => parseTextFormat('dims: [ 1 2 ]', 'f'), "f:1:11: expected ',' or ']' in the list of field 'dims', found '2'");
      expectError(() => parseTextFormat('dims: [ 1, ]', 'f'), "f:1:12: expected a value for field 'dims', found ']'");
      expectError(() => parseTextFormat('dims: [ 1', 'f'), "f:1:10: expected ',' or ']' in the list of field 'dims', found end of input");
    });

    it('a sign before something that is not a number', () => {
      expectError(() => parseTextFormat('a: -KIND_CPU', 'f'), "f:1:5: expected a number after '-', found 'KIND_CPU'");
      expectError(() => parseTextFormat('a: -"1"', 'f'), `f:1:5: expected a number after '-', found string "1"`);
    });
  });
});
