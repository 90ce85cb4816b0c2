// An EBNF grammar's language written inside a JSON string: the same rules, with every terminal
// (a "literal" or a [class]) rewritten to the JSON text of its characters — a quote and a
// backslash escaped, control characters as JSON escapes, everything else raw — and every rule
// name prefixed, so the result can sit inside a larger grammar between two quotes. This is how a
// custom tool's grammar holds when its input travels as a JSON string (tool-call-grammar.ts).
// Reads the xgrammar dialect the server's own translators write (rules, literals, classes,
// groups, | * + ? {n,m}); anything else is refused (PatternUnsupported, naming it). Pure.

import { ebnfLiteral } from './grammar-spec.js';
import { jsonCharSet } from './regex-ebnf.js';
import { PatternUnsupported } from './regex-grammar.js';

type Range = readonly [number, number];

const MAX_CODE_POINT = 0x10ffff;
/** What a backslash before these letters means, in a literal or a class. */
const LETTER_ESCAPES: Readonly<Record<string, number>> = { n: 0x0a, t: 0x09, r: 0x0d, b: 0x08, f: 0x0c, v: 0x0b, '0': 0x00 };
const HEX_ESCAPES: Readonly<Record<string, number>> = { x: 2, u: 4, U: 8 };

/** The grammar (rooted at `root`) as JSON string content; its root becomes `<prefix>root`. */
export function jsonStringEbnf(grammar: string, prefix: string): string {
  return new Rewriter(grammar, prefix, true).rewrite();
}

/** The same grammar with every rule name prefixed (its root becomes `<prefix>root`), terminals as written. */
export function prefixedEbnf(grammar: string, prefix: string): string {
  return new Rewriter(grammar, prefix, false).rewrite();
}

class Rewriter {
  private at = 0;
  private out = '';

  constructor(
    private readonly text: string,
    private readonly prefix: string,
    private readonly inJsonString: boolean,
  ) {}

  rewrite(): string {
    while (this.at < this.text.length) {
      const c = this.text[this.at]!;
      const rest = this.text.slice(this.at);
      const name = /^[A-Za-z_][A-Za-z0-9_-]*/.exec(rest);
      const counted = /^\{\s*\d+\s*(,\s*\d*\s*)?\}/.exec(rest);
      if (name) this.copy(name[0].length, `${this.prefix}${name[0]}`);
      else if (rest.startsWith('::=')) this.copy(3);
      else if (counted) this.copy(counted[0].length);
      else if (/[\s|()*+?]/.test(c)) this.copy(1);
      else if (c === '"' || c === '[') this.terminal(c);
      // Only renaming, the rest of the dialect (a lookahead's `(= …)`, say) can stand as written.
      else if (!this.inJsonString) this.copy(1);
      else throw new PatternUnsupported(`EBNF syntax at ${JSON.stringify(rest.slice(0, 12))}`);
    }
    return this.out;
  }

  private copy(length: number, as?: string): void {
    this.out += as ?? this.text.slice(this.at, this.at + length);
    this.at += length;
  }

  /** A literal or class: copied, or rewritten as the JSON text of its characters. */
  private terminal(open: string): void {
    const start = this.at;
    if (open === '"') {
      const value = this.literal();
      this.out += !this.inJsonString ? this.text.slice(start, this.at) : value === '' ? '""' : ebnfLiteral(JSON.stringify(value).slice(1, -1));
      return;
    }
    const set = this.charClass();
    if (!this.inJsonString) {
      this.out += this.text.slice(start, this.at);
      return;
    }
    const written = jsonCharSet(set);
    if (written === null) throw new PatternUnsupported('a character class that matches no character');
    this.out += written;
  }

  /** A "literal"'s characters. */
  private literal(): string {
    this.at++;
    let value = '';
    for (;;) {
      const c = this.text[this.at];
      if (c === undefined) throw new PatternUnsupported('an unterminated EBNF literal');
      if (c === '"') break;
      value += String.fromCodePoint(this.char());
    }
    this.at++;
    return value;
  }

  /** A [class]'s characters, as code point ranges. */
  private charClass(): Range[] {
    this.at++;
    const negated = this.text[this.at] === '^';
    if (negated) this.at++;
    const ranges: Range[] = [];
    while (this.text[this.at] !== ']') {
      if (this.at >= this.text.length) throw new PatternUnsupported('an unterminated EBNF character class');
      const lo = this.char();
      if (this.text[this.at] === '-' && this.text[this.at + 1] !== ']') {
        this.at++;
        ranges.push([lo, this.char()]);
      } else {
        ranges.push([lo, lo]);
      }
    }
    this.at++;
    return negated ? complement(ranges) : ranges;
  }

  /** One character of a literal or class, its escape decoded. */
  private char(): number {
    const c = this.text.codePointAt(this.at)!;
    this.at += c > 0xffff ? 2 : 1;
    if (c !== 0x5c) return c;
    const e = this.text[this.at++];
    if (e === undefined) throw new PatternUnsupported('an EBNF escape at the end of the grammar');
    const digits = HEX_ESCAPES[e];
    if (digits !== undefined) {
      const hex = this.text.slice(this.at, this.at + digits);
      if (!/^[0-9A-Fa-f]+$/.test(hex) || hex.length !== digits) throw new PatternUnsupported(`the EBNF escape \\${e}${hex}`);
      this.at += digits;
      return Number.parseInt(hex, 16);
    }
    return LETTER_ESCAPES[e] ?? e.codePointAt(0)!;
  }
}

function complement(ranges: readonly Range[]): Range[] {
  const out: Range[] = [];
  let next = 0;
  for (const [lo, hi] of [...ranges].sort((a, b) => a[0] - b[0])) {
    if (lo > next) out.push([next, lo - 1]);
    next = Math.max(next, hi + 1);
  }
  if (next <= MAX_CODE_POINT) out.push([next, MAX_CODE_POINT]);
  return out;
}
