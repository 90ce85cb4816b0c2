// Tokenizer for protobuf text format (config.pbtxt). It also reads JSON, so that a config
// override sent as JSON gets the same positioned errors as a file.
import { configError, type Pos } from './locate.js';

export type TokenKind = 'identifier' | 'integer' | 'float' | 'string' | 'symbol' | 'eof';

export interface Token {
  readonly kind: TokenKind;
  /** Source text; for strings the decoded value. Numbers keep their literal (no sign). */
  readonly text: string;
  readonly pos: Pos;
  /** Index of the token's first character in the source. */
  readonly offset: number;
}

const SYMBOLS = new Set(['{', '}', '<', '>', '[', ']', ':', ',', ';', '-']);
const JSON_ESCAPES = new Set(['"', '\\', '/', 'b', 'f', 'n', 'r', 't', 'u']);
const SIMPLE_ESCAPES: Readonly<Record<string, number>> = {
  n: 0x0a,
  t: 0x09,
  r: 0x0d,
  '\\': 0x5c,
  "'": 0x27,
  '"': 0x22,
  a: 0x07,
  b: 0x08,
  f: 0x0c,
  v: 0x0b,
  '?': 0x3f,
};
const isDigit = (c: string | undefined) => c !== undefined && c >= '0' && c <= '9';
const isHex = (c: string | undefined) => c !== undefined && /^[0-9a-fA-F]$/.test(c);
const isIdentStart = (c: string | undefined) => c !== undefined && /^[A-Za-z_]$/.test(c);
const isIdentPart = (c: string | undefined) => c !== undefined && /^[A-Za-z0-9_]$/.test(c);
const utf8 = new TextEncoder();
const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

export interface TokenizerOptions {
  /** JSON mode: no `#` comments, and `\/` is a valid escape. */
  readonly json?: boolean;
}

export function tokenize(source: string, label: string, options: TokenizerOptions = {}): Token[] {
  return new Tokenizer(source, label, options.json ?? false).run();
}

class Tokenizer {
  private index = 0;
  private line = 1;
  private lineStart = 0;
  private readonly tokens: Token[] = [];

  constructor(
    private readonly src: string,
    private readonly label: string,
    private readonly json: boolean,
  ) {}

  run(): Token[] {
    for (;;) {
      this.skipSpaceAndComments();
      const pos = this.here();
      const offset = this.index;
      const token = this.token(pos);
      this.tokens.push({ ...token, pos, offset });
      if (token.kind === 'eof') return this.tokens;
    }
  }

  private token(pos: Pos): Omit<Token, 'offset' | 'pos'> {
    const c = this.src[this.index];
    if (c === undefined) return { kind: 'eof', text: '' };
    if (isIdentStart(c)) return this.identifier();
    if (isDigit(c) || (c === '.' && isDigit(this.src[this.index + 1]))) return this.number(pos);
    if (c === '"' || (c === "'" && !this.json)) return this.string(pos, c);
    if (SYMBOLS.has(c)) {
      this.index++;
      return { kind: 'symbol', text: c };
    }
    throw this.error(pos, `unexpected character ${JSON.stringify(c)}`);
  }

  private here(): Pos {
    return { line: this.line, column: this.index - this.lineStart + 1 };
  }

  private error(pos: Pos, message: string) {
    return configError(this.label, pos, message);
  }

  private skipSpaceAndComments(): void {
    for (;;) {
      const c = this.src[this.index];
      if (c === '\n') {
        this.index++;
        this.line++;
        this.lineStart = this.index;
      } else if (c === ' ' || c === '\t' || c === '\r' || c === '\v' || c === '\f') {
        this.index++;
      } else if (c === '#' && !this.json) {
        while (this.index < this.src.length && this.src[this.index] !== '\n') this.index++;
      } else return;
    }
  }

  private identifier(): Omit<Token, 'offset' | 'pos'> {
    const start = this.index;
    while (isIdentPart(this.src[this.index])) this.index++;
    return { kind: 'identifier', text: this.src.slice(start, this.index) };
  }

  private number(pos: Pos): Omit<Token, 'offset' | 'pos'> {
    const start = this.index;
    const s = this.src;
    let kind: TokenKind = 'integer';
    if (s[start] === '0' && (s[start + 1] === 'x' || s[start + 1] === 'X')) {
      this.index += 2;
      if (!isHex(s[this.index])) throw this.error(pos, `"${s.slice(start, this.index)}" must be followed by hex digits`);
      while (isHex(s[this.index])) this.index++;
    } else if (s[start] === '0' && isDigit(s[start + 1])) {
      while (isDigit(s[this.index])) this.index++;
      if (/[89]/.test(s.slice(start, this.index))) throw this.error(pos, `invalid octal number "${s.slice(start, this.index)}"`);
    } else {
      while (isDigit(s[this.index])) this.index++;
      if (s[this.index] === '.') {
        kind = 'float';
        this.index++;
        while (isDigit(s[this.index])) this.index++;
      }
      kind = this.exponent(pos) ? 'float' : kind;
      if (s[this.index] === 'f' || s[this.index] === 'F') {
        kind = 'float';
        this.index++;
      }
    }
    if (isIdentPart(s[this.index]) || s[this.index] === '.') {
      throw this.error(this.here(), `need space between number "${s.slice(start, this.index)}" and ${JSON.stringify(s[this.index])}`);
    }
    return { kind, text: s.slice(start, this.index) };
  }

  private exponent(pos: Pos): boolean {
    const s = this.src;
    if (s[this.index] !== 'e' && s[this.index] !== 'E') return false;
    this.index++;
    if (s[this.index] === '+' || s[this.index] === '-') this.index++;
    if (!isDigit(s[this.index])) throw this.error(pos, 'exponent has no digits');
    while (isDigit(s[this.index])) this.index++;
    return true;
  }

  private string(pos: Pos, quote: string): Omit<Token, 'offset' | 'pos'> {
    const bytes: number[] = [];
    this.index++;
    for (;;) {
      const c = this.src[this.index];
      if (c === undefined || c === '\n') throw this.error(pos, 'unterminated string');
      if (c === quote) break;
      if (this.json && c < ' ') throw this.error(this.here(), 'control character in a JSON string');
      if (c === '\\') this.escape(bytes);
      else {
        const code = this.src.codePointAt(this.index)!;
        const char = String.fromCodePoint(code);
        bytes.push(...utf8.encode(char));
        this.index += char.length;
      }
    }
    this.index++;
    try {
      return { kind: 'string', text: strictUtf8.decode(new Uint8Array(bytes)) };
    } catch {
      throw this.error(pos, 'string is not valid UTF-8');
    }
  }

  /** Appends the bytes of the escape sequence at `index` (which points at the backslash). */
  private escape(bytes: number[]): void {
    const pos = this.here();
    const c = this.src[this.index + 1];
    this.index += 2;
    if (this.json && !JSON_ESCAPES.has(c ?? '')) throw this.error(pos, `invalid escape sequence "\\${c ?? ''}" in JSON`);
    if (c !== undefined && c in SIMPLE_ESCAPES) bytes.push(SIMPLE_ESCAPES[c]!);
    else if (c === '/' && this.json) bytes.push(0x2f);
    else if (c !== undefined && c >= '0' && c <= '7') {
      let value = Number(c);
      for (let n = 0; n < 2 && /[0-7]/.test(this.src[this.index] ?? ''); n++) value = value * 8 + Number(this.src[this.index++]);
      if (value > 0xff) throw this.error(pos, 'octal escape is larger than one byte');
      bytes.push(value);
    } else if (c === 'x' || c === 'X') {
      const digits = this.takeHex(2, 1, pos, '\\x');
      bytes.push(Number.parseInt(digits, 16));
    } else if (c === 'u' || c === 'U') {
      const length = c === 'u' ? 4 : 8;
      bytes.push(...utf8.encode(String.fromCodePoint(this.codePoint(length, pos))));
    } else {
      throw this.error(pos, `invalid escape sequence "\\${c ?? ''}"`);
    }
  }

  private takeHex(max: number, min: number, pos: Pos, what: string): string {
    const start = this.index;
    while (this.index - start < max && isHex(this.src[this.index])) this.index++;
    if (this.index - start < min) throw this.error(pos, `${what} must be followed by ${min === max ? min : 'at least one'} hex digit${min === 1 ? '' : 's'}`);
    return this.src.slice(start, this.index);
  }

  /** A \u or \U escape; a high surrogate must be followed by a \u low surrogate (as in JSON). */
  private codePoint(length: number, pos: Pos): number {
    const value = Number.parseInt(this.takeHex(length, length, pos, length === 4 ? '\\u' : '\\U'), 16);
    if (value >= 0xdc00 && value <= 0xdfff) throw this.error(pos, 'unpaired low surrogate in \\u escape');
    if (value < 0xd800 || value > 0xdbff) {
      if (value > 0x10ffff) throw this.error(pos, 'code point in \\U escape is beyond U+10FFFF');
      return value;
    }
    if (this.src[this.index] !== '\\' || this.src[this.index + 1] !== 'u') throw this.error(pos, 'high surrogate in \\u escape is not followed by a low surrogate');
    this.index += 2;
    const low = Number.parseInt(this.takeHex(4, 4, pos, '\\u'), 16);
    if (low < 0xdc00 || low > 0xdfff) throw this.error(pos, 'high surrogate in \\u escape is not followed by a low surrogate');
    return 0x10000 + ((value - 0xd800) << 10) + (low - 0xdc00);
  }
}
