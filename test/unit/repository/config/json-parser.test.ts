import { describe, expect, it } from 'vitest';
import type { MessageNode } from '../../../../src/repository/config/ast.js';
import { parseJsonConfig } from '../../../../src/repository/config/json-parser.js';
import { expectError } from './helpers.js';

describe('JSON config reader', () => {
  it('maps objects to messages, arrays to list fields, and drops null members', () => {
    const root = parseJsonConfig('{"name": "m", "dims": [1, -2.5e1], "x": null, "sub": {"ok": true}, "e": []}', 'config');
    expect(root.json).toBe(true);
    expect(root.fields.map((f) => [f.name, f.list, f.values.length])).toEqual([
      ['name', false, 1],
      ['dims', true, 2],
      ['sub', false, 1],
      ['e', true, 0],
    ]);
    expect(root.fields[1]!.values).toEqual([
      { kind: 'number', text: '1', integer: true, negative: false, pos: { line: 1, column: 24 } },
      { kind: 'number', text: '2.5e1', integer: false, negative: true, pos: { line: 1, column: 27 } },
    ]);
    const sub = root.fields[2]!.values[0] as MessageNode;
    expect(sub.json).toBe(true);
    expect(sub.fields[0]!.values[0]).toEqual({ kind: 'identifier', name: 'true', negative: false, pos: { line: 1, column: 61 } });
  });

  it('keeps member positions across lines', () => {
    const root = parseJsonConfig('{\n  "name": "m",\n  "max_batch_size": 4\n}', 'config');
    expect(root.fields.map((f) => f.pos)).toEqual([
      { line: 2, column: 3 },
      { line: 3, column: 3 },
    ]);
  });

  it('rejects what is not JSON, with positions', () => {
    expectError(() => parseJsonConfig('[1]', 'config'), "config:1:1: expected a JSON object, found '['");
    expectError(() => parseJsonConfig('{"a": 1} x', 'config'), "config:1:10: unexpected 'x' after the JSON object");
    expectError(() => parseJsonConfig('{a: 1}', 'config'), "config:1:2: expected a member name in double quotes, found 'a'");
    expectError(() => parseJsonConfig('{"a" 1}', 'config'), `config:1:6: expected ':' after member "a", found '1'`);
    expectError(() => parseJsonConfig('{"a": 1,}', 'config'), "config:1:9: expected a member name in double quotes, found '}'");
    expectError(() => parseJsonConfig('{"a": 1 "b": 2}', 'config'), `config:1:9: expected ',' or '}' in an object, found string "b"`);
    expectError(() => parseJsonConfig('{"a": [1 2]}', 'config'), "config:1:10: expected ',' or ']' in an array, found '2'");
    expectError(() => parseJsonConfig('{"a": TYPE_FP32}', 'config'), "config:1:7: expected a JSON value, found 'TYPE_FP32'");
    expectError(() => parseJsonConfig('{"a": [[1]]}', 'config'), 'config:1:8: nested arrays have no protobuf meaning');
    expectError(() => parseJsonConfig('{"a": [null]}', 'config'), 'config:1:8: null is not allowed inside an array');
    expectError(() => parseJsonConfig('{"a": 017}', 'config'), 'config:1:7: invalid JSON number');
    expectError(() => parseJsonConfig('{"a": 0x1}', 'config'), 'config:1:7: invalid JSON number');
    expectError(() => parseJsonConfig('{"a": 1.5f}', 'config'), 'config:1:7: invalid JSON number');
    expectError(() => parseJsonConfig('{"a": - 1}', 'config'), 'config:1:7: invalid JSON number');
    expectError(() => parseJsonConfig('{"a": .5}', 'config'), 'config:1:7: invalid JSON number');
    expectError(() => parseJsonConfig('{"a": 1', 'config'), "config:1:8: expected ',' or '}' in an object, found end of input");
  });
});
