// JSON reader producing the same tree as the text-format parser, with positions, so a config
// sent to the repository load API is decoded and validated by the same code as a config.pbtxt.
// Protobuf JSON conventions: objects are messages (or maps), arrays are repeated fields, and a
// null member means "not set".
import { MAX_NESTING_DEPTH, type FieldNode, type MessageNode, type ValueNode } from './ast.js';
import { configError } from './locate.js';
import { tokenize, type Token } from './tokenizer.js';

const JSON_NUMBER = /^(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;

/** Parses a JSON document whose top level must be an object. */
export function parseJsonConfig(source: string, label: string): MessageNode {
  const parser = new JsonParser(tokenize(source, label, { json: true }), label, source);
  return parser.document();
}

type JsonValue = ValueNode | { kind: 'array'; values: ValueNode[] } | { kind: 'null' };

class JsonParser {
  private at = 0;
  private depth = 0;

  constructor(
    private readonly tokens: readonly Token[],
    private readonly label: string,
    private readonly source: string,
  ) {}

  document(): MessageNode {
    const first = this.peek();
    if (!this.isSymbol('{')) this.fail(first, `expected a JSON object, found ${this.describe(first)}`);
    const message = this.object();
    const rest = this.peek();
    if (rest.kind !== 'eof') this.fail(rest, `unexpected ${this.describe(rest)} after the JSON object`);
    return message;
  }

  private peek(): Token {
    return this.tokens[this.at]!;
  }

  private next(): Token {
    const token = this.tokens[this.at]!;
    if (token.kind !== 'eof') this.at++;
    return token;
  }

  private isSymbol(text: string): boolean {
    const token = this.peek();
    return token.kind === 'symbol' && token.text === text;
  }

  private describe(token: Token): string {
    if (token.kind === 'eof') return 'end of input';
    if (token.kind === 'string') return `string ${JSON.stringify(token.text)}`;
    return `'${token.text}'`;
  }

  private fail(token: Token, message: string): never {
    throw configError(this.label, token.pos, message);
  }

  private expect(text: string, context: string): Token {
    const token = this.next();
    if (token.kind !== 'symbol' || token.text !== text) this.fail(token, `expected '${text}' ${context}, found ${this.describe(token)}`);
    return token;
  }

  private object(): MessageNode {
    const open = this.next();
    if (this.depth === MAX_NESTING_DEPTH) this.fail(open, `objects nest more than ${MAX_NESTING_DEPTH} levels deep`);
    this.depth++;
    const message = this.members(open);
    this.depth--;
    return message;
  }

  private members(open: Token): MessageNode {
    const fields: FieldNode[] = [];
    if (this.isSymbol('}')) {
      this.next();
      return { kind: 'message', fields, pos: open.pos, json: true };
    }
    for (;;) {
      const key = this.next();
      if (key.kind !== 'string') this.fail(key, `expected a member name in double quotes, found ${this.describe(key)}`);
      this.expect(':', `after member "${key.text}"`);
      const value = this.value();
      if (value.kind === 'array') fields.push({ name: key.text, pos: key.pos, values: value.values, list: true });
      else if (value.kind !== 'null') fields.push({ name: key.text, pos: key.pos, values: [value], list: false });
      const separator = this.next();
      if (separator.kind === 'symbol' && separator.text === '}') return { kind: 'message', fields, pos: open.pos, json: true };
      if (separator.kind !== 'symbol' || separator.text !== ',') this.fail(separator, `expected ',' or '}' in an object, found ${this.describe(separator)}`);
    }
  }

  private array(): { kind: 'array'; values: ValueNode[] } {
    this.next();
    const values: ValueNode[] = [];
    if (this.isSymbol(']')) {
      this.next();
      return { kind: 'array', values };
    }
    for (;;) {
      const start = this.peek();
      // Refused before descending, so '[[[[…' cannot recurse.
      if (this.isSymbol('[')) this.fail(start, 'nested arrays have no protobuf meaning');
      const value = this.value();
      if (value.kind === 'array') this.fail(start, 'nested arrays have no protobuf meaning');
      if (value.kind === 'null') this.fail(start, 'null is not allowed inside an array');
      values.push(value);
      const separator = this.next();
      if (separator.kind === 'symbol' && separator.text === ']') return { kind: 'array', values };
      if (separator.kind !== 'symbol' || separator.text !== ',') this.fail(separator, `expected ',' or ']' in an array, found ${this.describe(separator)}`);
    }
  }

  private value(): JsonValue {
    const token = this.peek();
    if (this.isSymbol('{')) return this.object();
    if (this.isSymbol('[')) return this.array();
    if (this.isSymbol('-')) return this.number(this.next(), true);
    this.next();
    if (token.kind === 'string') return { kind: 'string', value: token.text, pos: token.pos };
    if (token.kind === 'integer' || token.kind === 'float') return this.number(token, false);
    if (token.kind === 'identifier' && (token.text === 'true' || token.text === 'false')) {
      return { kind: 'identifier', name: token.text, negative: false, pos: token.pos };
    }
    if (token.kind === 'identifier' && token.text === 'null') return { kind: 'null' };
    return this.fail(token, `expected a JSON value, found ${this.describe(token)}`);
  }

  /** `first` is the number token, or the '-' before it. */
  private number(first: Token, negative: boolean): ValueNode {
    const token = negative ? this.next() : first;
    const adjacent = !negative || token.offset === first.offset + 1;
    if ((token.kind !== 'integer' && token.kind !== 'float') || !adjacent || !JSON_NUMBER.test(this.source.slice(token.offset, token.offset + token.text.length))) {
      this.fail(first, `invalid JSON number`);
    }
    const integer = !/[.eE]/.test(token.text);
    return { kind: 'number', text: token.text, integer, negative, pos: first.pos };
  }
}
