// Protobuf text format parser: tokens → a schema-free tree of messages and fields.
//
// Grammar (what protobuf's TextFormat accepts, minus extensions and Any expansion):
//   body    := ( field [ ',' | ';' ] )*
//   field   := name ':' ( scalar | message | '[' [ value ( ',' value )* ] ']' )
//            | name ( message | '[' [ message ( ',' message )* ] ']' )
//   message := '{' body '}' | '<' body '>'
//   scalar  := string+ | [ '-' ] number | [ '-' ] identifier
import { MAX_NESTING_DEPTH, type FieldNode, type MessageNode, type ValueNode } from './ast.js';
import { configError, formatPos, type Pos } from './locate.js';
import { tokenize, type Token } from './tokenizer.js';

const CLOSER: Readonly<Record<string, string>> = { '{': '}', '<': '>' };
const SIGNED_IDENTIFIERS = new Set(['inf', 'infinity', 'nan']);

/** Parses a whole text-format document as the body of one top-level message. */
export function parseTextFormat(source: string, label: string): MessageNode {
  return new TextParser(tokenize(source, label), label).document();
}

function describeToken(token: Token): string {
  if (token.kind === 'eof') return 'end of input';
  if (token.kind === 'string') return `string ${JSON.stringify(token.text)}`;
  return `'${token.text}'`;
}

class TextParser {
  private at = 0;
  private depth = 0;

  constructor(
    private readonly tokens: readonly Token[],
    private readonly label: string,
  ) {}

  document(): MessageNode {
    const start = this.peek().pos;
    const fields = this.body(null);
    return { kind: 'message', fields, pos: start, json: false };
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

  private fail(token: Token, message: string): never {
    throw configError(this.label, token.pos, message);
  }

  /** Fields up to `close` (a closing brace) or, for the document, the end of input. */
  private body(close: { text: string; open: Pos } | null): FieldNode[] {
    const fields: FieldNode[] = [];
    for (;;) {
      const token = this.peek();
      if (close && token.kind === 'symbol' && token.text === close.text) return fields;
      if (token.kind === 'eof') {
        if (!close) return fields;
        this.fail(token, `expected '${close.text}' to close the message opened at ${formatPos(close.open)}, found end of input`);
      }
      if (token.kind === 'symbol' && (token.text === '}' || token.text === '>' || token.text === ']')) {
        if (close) this.fail(token, `expected '${close.text}' to close the message opened at ${formatPos(close.open)}, found '${token.text}'`);
        this.fail(token, `unexpected '${token.text}' outside any message`);
      }
      if (token.kind !== 'identifier') {
        const wanted = close ? `a field name or '${close.text}'` : 'a field name';
        this.fail(token, `expected ${wanted}, found ${describeToken(token)}`);
      }
      fields.push(this.field());
      if (this.isSymbol(',') || this.isSymbol(';')) this.next();
    }
  }

  private field(): FieldNode {
    const nameToken = this.next();
    const name = nameToken.text;
    if (this.isSymbol(':')) {
      this.next();
      if (this.isSymbol('[')) return { name, pos: nameToken.pos, ...this.list(name, false) };
      return { name, pos: nameToken.pos, values: [this.value(name)], list: false };
    }
    if (this.isSymbol('{') || this.isSymbol('<')) return { name, pos: nameToken.pos, values: [this.message()], list: false };
    if (this.isSymbol('[')) return { name, pos: nameToken.pos, ...this.list(name, true) };
    return this.fail(this.peek(), `expected ':' or '{' after field name '${name}', found ${describeToken(this.peek())}`);
  }

  private list(name: string, messagesOnly: boolean): { values: ValueNode[]; list: true } {
    this.next();
    const values: ValueNode[] = [];
    if (this.isSymbol(']')) {
      this.next();
      return { values, list: true };
    }
    for (;;) {
      if (messagesOnly && !this.isSymbol('{') && !this.isSymbol('<')) {
        this.fail(this.peek(), `expected '{' in the list of field '${name}' (a list of scalars needs ':' after the field name), found ${describeToken(this.peek())}`);
      }
      values.push(this.value(name));
      const token = this.next();
      if (token.kind === 'symbol' && token.text === ']') return { values, list: true };
      if (token.kind !== 'symbol' || token.text !== ',') this.fail(token, `expected ',' or ']' in the list of field '${name}', found ${describeToken(token)}`);
    }
  }

  private value(name: string): ValueNode {
    const token = this.peek();
    if (token.kind === 'symbol' && (token.text === '{' || token.text === '<')) return this.message();
    if (token.kind === 'string') return this.strings();
    if (token.kind === 'integer' || token.kind === 'float') {
      this.next();
      return { kind: 'number', text: token.text, integer: token.kind === 'integer', negative: false, pos: token.pos };
    }
    if (token.kind === 'identifier') {
      this.next();
      return { kind: 'identifier', name: token.text, negative: false, pos: token.pos };
    }
    if (token.kind === 'symbol' && token.text === '-') return this.negative();
    return this.fail(token, `expected a value for field '${name}', found ${describeToken(token)}`);
  }

  private negative(): ValueNode {
    const minus = this.next();
    const token = this.next();
    if (token.kind === 'integer' || token.kind === 'float') {
      return { kind: 'number', text: token.text, integer: token.kind === 'integer', negative: true, pos: minus.pos };
    }
    if (token.kind === 'identifier' && SIGNED_IDENTIFIERS.has(token.text.toLowerCase())) {
      return { kind: 'identifier', name: token.text, negative: true, pos: minus.pos };
    }
    return this.fail(token, `expected a number after '-', found ${describeToken(token)}`);
  }

  /** One or more adjacent string literals, joined as protobuf does. */
  private strings(): ValueNode {
    const first = this.next();
    let value = first.text;
    while (this.peek().kind === 'string') value += this.next().text;
    return { kind: 'string', value, pos: first.pos };
  }

  private message(): MessageNode {
    const open = this.next();
    if (this.depth === MAX_NESTING_DEPTH) this.fail(open, `messages nest more than ${MAX_NESTING_DEPTH} levels deep`);
    const closeText = CLOSER[open.text]!;
    this.depth++;
    const fields = this.body({ text: closeText, open: open.pos });
    this.depth--;
    this.next();
    return { kind: 'message', fields, pos: open.pos, json: false };
  }
}
