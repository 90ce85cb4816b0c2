// The syntax tree both config readers produce (protobuf text format and JSON), before any schema
// is applied. Every node keeps where it started so schema errors can point at it.
import type { Pos } from './locate.js';

/**
 * Deepest message nesting either reader accepts (protobuf's TextFormat parser defaults to the
 * same 100). ModelConfig itself nests about 6 deep; the limit keeps a hostile document from
 * exhausting the stack of the recursive readers.
 */
export const MAX_NESTING_DEPTH = 100;

/**
 * Longest config text read, in characters. Real model configs are a few KiB; the readers cost a
 * few µs a character, so a multi-megabyte config sent to the load API would hold the event loop
 * for seconds.
 */
export const MAX_CONFIG_CHARS = 256 * 1024;

export interface StringNode {
  readonly kind: 'string';
  /** Decoded value; adjacent literals ("a" "b") are already joined. */
  readonly value: string;
  readonly pos: Pos;
}

export interface NumberNode {
  readonly kind: 'number';
  /** The literal without its sign: `12`, `0x1F`, `017`, `1.5e3`, `2.5f`. */
  readonly text: string;
  /** True for integer literals (decimal, hex, octal), false for floats. */
  readonly integer: boolean;
  readonly negative: boolean;
  readonly pos: Pos;
}

export interface IdentifierNode {
  readonly kind: 'identifier';
  /** Enum names, booleans, `inf` / `nan`. */
  readonly name: string;
  /** Set for `-inf`; an identifier after `-` is only accepted for inf/infinity/nan. */
  readonly negative: boolean;
  readonly pos: Pos;
}

export interface MessageNode {
  readonly kind: 'message';
  readonly fields: FieldNode[];
  /** Position of the opening brace. */
  readonly pos: Pos;
  /** Read from JSON: map fields are objects, repeated fields arrays, field names may be camelCase. */
  readonly json: boolean;
}

export type ScalarNode = StringNode | NumberNode | IdentifierNode;
export type ValueNode = ScalarNode | MessageNode;

export interface FieldNode {
  readonly name: string;
  /** Position of the field name. */
  readonly pos: Pos;
  /** One value, or the elements of a `[a, b]` list. */
  readonly values: ValueNode[];
  /** Written as a list (`dims: [1, 2]`, `input [ {…} ]`, or a JSON array). */
  readonly list: boolean;
}

/** Short description of a value for error messages: `"abc"`, `12`, `TYPE_FP32`, `a message`. */
export function describeValue(node: ValueNode): string {
  switch (node.kind) {
    case 'string':
      return `string ${JSON.stringify(node.value)}`;
    case 'number':
      return `number ${node.negative ? '-' : ''}${node.text}`;
    case 'identifier':
      return `identifier ${node.negative ? '-' : ''}${node.name}`;
    case 'message':
      return 'a message';
  }
}
