// The grammar being written: its rules, named once each, and the rules every JSON grammar needs
// (any string, number, integer, value), defined on first use and shared after. Pure.

import { JSON_ESCAPE, JSON_PLAIN_CHAR } from '../regex-ebnf.js';

/** The grammar's rules: named once each, helper rules shared by their text. */
export class GrammarRules {
  private readonly bodies = new Map<string, string>();
  private readonly byBody = new Map<string, string>();
  private count = 0;
  private stringRestName: string | null = null;
  private anyValueName: string | null = null;
  private readonly built = new Map<string, string>();

  /** Rules named so far. */
  get size(): number {
    return this.count;
  }

  /** A fresh rule name (defined later: recursion refers to it before its body exists). */
  reserve(hint: string): string {
    return `${hint
      .replace(/[^A-Za-z0-9_]/g, '_')
      .replace(/^([^A-Za-z_])/, '_$1')
      .slice(0, 40)}_${this.count++}`;
  }

  define(name: string, body: string): string {
    this.bodies.set(name, body);
    return name;
  }

  /** A rule for the body, reused when the same body was named before. */
  share(hint: string, body: string): string {
    const known = this.byBody.get(body);
    if (known) return known;
    const name = this.define(this.reserve(hint), body);
    this.byBody.set(body, name);
    return name;
  }

  text(root: string): string {
    return [`root ::= ${root}`, ...this.lines()].join('\n');
  }

  /** The rules without a root: for a grammar whose root is written elsewhere (tool-call-grammar.ts). */
  definitions(): string {
    return this.lines().join('\n');
  }

  private lines(): string[] {
    return [...this.bodies].map(([name, body]) => `${name} ::= ${body}`);
  }

  // Strings are right-recursive rules (a character, then the rest): xgrammar computes their masks
  // in microseconds, where the same language as `char*` or `char{0,n}` took it ~200 ms a mask on a
  // 152K vocabulary.

  /** The rest of a string after its opening quote: characters, then the closing quote. */
  stringRest(): string {
    if (this.stringRestName !== null) return this.stringRestName;
    const name = this.reserve('string_rest');
    this.stringRestName = name;
    return this.define(name, `"\\"" | ${JSON_PLAIN_CHAR} ${name} | "\\\\" ${JSON_ESCAPE} ${name}`);
  }

  /**
   * What `build` writes (rules, and the expression naming them), once per `key`: constructions
   * whose rules refer to each other (a counted string, a loop) are not shared by `share`, which
   * keys a single body, and each copy would cost the compile its positions again.
   */
  once(key: string, build: () => string): string {
    let known = this.built.get(key);
    if (known === undefined) this.built.set(key, (known = build()));
    return known;
  }

  /**
   * The rest of a string whose every remaining character is one of `char` (EBNF alternatives for
   * one character: jsonCharParts), then the closing quote.
   */
  charsThenQuote(char: readonly string[]): string {
    return this.once(`chars_rest ${char.join(' | ')}`, () => {
      const name = this.reserve('chars_rest');
      return this.define(name, ['"\\""', ...char.map((part) => `${part} ${name}`)].join(' | '));
    });
  }

  anyString(): string {
    return this.share('json_string', `"\\"" ${this.stringRest()}`);
  }

  anyNumber(): string {
    return this.share('json_number', '"-"? ("0" | [1-9] [0-9]*) ("." [0-9]+)? ([eE] [+-]? [0-9]+)?');
  }

  anyInteger(): string {
    return this.share('json_integer', '"-"? ("0" | [1-9] [0-9]*)');
  }

  anyValue(): string {
    if (this.anyValueName !== null) return this.anyValueName;
    const value = this.reserve('json_value');
    this.anyValueName = value;
    const object = this.share('json_object', `"{" "}" | "{" ${this.anyString()} ": " ${value} (", " ${this.anyString()} ": " ${value})* "}"`);
    const array = this.share('json_array', `"[" "]" | "[" ${value} (", " ${value})* "]"`);
    this.define(value, `${object} | ${array} | ${this.anyString()} | ${this.anyNumber()} | "true" | "false" | "null"`);
    return value;
  }
}
