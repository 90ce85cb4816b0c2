// A custom tool's `lark` grammar as the grammar engine's
// EBNF, for the part of Lark that describes a language the engine can enforce exactly: rules
// and terminals (`name: …`, `NAME: …`, `?name` / `!name`, priorities and `-> alias`, which change
// the parse tree, not the language), alternatives (also on `|` continuation lines), sequences, groups,
// `[optional]`, `* + ?`, `~ n` / `~ n..m`, "literals", "a".."z" ranges and /regex/ terminals
// (classes, escapes, groups, alternation, quantifiers), `%import common.NAME` for the common
// terminals below, `//` and whole-line `#` comments. What would change the language or needs
// a parser the engine is not — %ignore, other imports, %declare, templates, case-insensitive
// literals, regex flags, lookaround, backreferences, anchors inside — is refused by name
// (UnsupportedLark), never dropped. Pure.

/** A Lark construct outside the translated subset; `construct` names it for the 400. */
export class UnsupportedLark extends Error {
  constructor(readonly construct: string) {
    super(`Lark ${construct} is not supported by this server's grammar engine`);
  }
}

const NAME = /^[?!]?([A-Za-z_][A-Za-z0-9_]*)(\.-?\d+)?\s*:/;

/** Every Lark name gets a prefix, so none collides with the engine's `root`. */
const ebnfName = (name: string): string => `l_${name}`;

/**
 * Lark's `common` terminals that a grammar may import, as Lark defines their languages (the
 * names a grammar uses for newlines, spaces, digits, words and integers).
 */
const COMMON: Readonly<Record<string, string>> = {
  LF: '/\\n/',
  CR: '/\\r/',
  NEWLINE: '(CR? LF)+',
  WS_INLINE: '(" " | /\\t/)+',
  WS: '/[ \\t\\f\\r\\n]/+',
  DIGIT: '"0".."9"',
  HEXDIGIT: '"a".."f" | "A".."F" | DIGIT',
  INT: 'DIGIT+',
  SIGNED_INT: '["+" | "-"] INT',
  DECIMAL: 'INT "." INT? | "." INT',
  LCASE_LETTER: '"a".."z"',
  UCASE_LETTER: '"A".."Z"',
  LETTER: 'UCASE_LETTER | LCASE_LETTER',
  WORD: 'LETTER+',
  CNAME: '("_" | LETTER) ("_" | LETTER | DIGIT)*',
};

/** `%import common.NAME` or `%import common (A, B)`: the common terminals named, with those they use. */
function importCommon(line: string, rules: Map<string, string>): void {
  const match = /^%import\s+common(?:\.([A-Z_]+)|\s*\(([A-Z_,\s]+)\))\s*$/.exec(line);
  const names = match ? (match[1] ?? match[2]!).split(',').map((n) => n.trim()) : [];
  if (names.length === 0 || names.some((n) => COMMON[n] === undefined)) {
    throw new UnsupportedLark(`directive ${JSON.stringify(line)} (%import takes common.${Object.keys(COMMON).join(', common.')})`);
  }
  const add = (name: string): void => {
    if (rules.has(name)) return;
    rules.set(name, COMMON[name]!);
    for (const used of COMMON[name]!.match(/\b[A-Z_]+\b/g) ?? []) if (COMMON[used] !== undefined) add(used);
  };
  for (const name of names) add(name);
}

/** The definition's rules, each `name → its expansion text` (continuation lines joined). */
function splitRules(definition: string): Map<string, string> {
  const rules = new Map<string, string>();
  const imports: string[] = [];
  let current: string | null = null;
  for (const raw of definition.split('\n')) {
    const line = stripComment(raw).trim();
    if (line === '' || line.startsWith('#')) continue;
    if (line.startsWith('%import')) {
      imports.push(line);
      continue;
    }
    if (line.startsWith('%')) throw new UnsupportedLark(`directive ${line.split(/\s/)[0]}`);
    const head = NAME.exec(line);
    if (head) {
      current = head[1]!;
      if (rules.has(current)) throw new UnsupportedLark(`rule ${current} defined twice`);
      rules.set(current, line.slice(head[0].length));
    } else if (line.startsWith('|') && current !== null) {
      rules.set(current, `${rules.get(current)} ${line}`);
    } else if (/^[?!]?[A-Za-z_][A-Za-z0-9_]*\{/.test(line)) {
      throw new UnsupportedLark('templates');
    } else {
      throw new UnsupportedLark(`line ${JSON.stringify(line)}`);
    }
  }
  // After the grammar's own rules, so a name it defines itself is its own.
  for (const line of imports) importCommon(line, rules);
  return rules;
}

/** A line without its `//` comment (outside literals and regexes). */
function stripComment(line: string): string {
  let quote: string | null = null;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quote !== null) {
      if (c === '\\') i++;
      else if (c === quote) quote = null;
    } else if (c === '"' || c === '/') {
      if (c === '/' && line[i + 1] === '/') return line.slice(0, i);
      quote = c;
    }
  }
  return line;
}

/** Lark's definition as the engine's EBNF, rooted at `start`. */
export function larkToEbnf(definition: string): string {
  const rules = splitRules(definition);
  if (!rules.has('start')) throw new UnsupportedLark('grammar without a start rule');
  const lines = [`root ::= ${ebnfName('start')}`];
  for (const [name, body] of rules) lines.push(`${ebnfName(name)} ::= ${new Expansion(body, rules).translate()}`);
  return lines.join('\n');
}

/** One rule's expansion text, read left to right. */
class Expansion {
  private at = 0;

  constructor(
    private readonly text: string,
    private readonly rules: ReadonlyMap<string, string>,
  ) {}

  translate(): string {
    const out = this.alternatives();
    this.space();
    if (this.at < this.text.length) throw new UnsupportedLark(`syntax at ${JSON.stringify(this.text.slice(this.at, this.at + 12))}`);
    return out;
  }

  private space(): void {
    while (/\s/.test(this.text[this.at] ?? '')) this.at++;
  }

  private alternatives(): string {
    const alts = [this.sequence()];
    for (this.space(); this.text[this.at] === '|'; this.space()) {
      this.at++;
      alts.push(this.sequence());
    }
    return alts.join(' | ');
  }

  private sequence(): string {
    const items: string[] = [];
    for (this.space(); this.at < this.text.length && !'|)]'.includes(this.text[this.at]!); this.space()) {
      // `-> alias` names the alternative's tree node: nothing of the language.
      const alias = /^->\s*[A-Za-z_][A-Za-z0-9_]*/.exec(this.text.slice(this.at));
      if (alias) {
        this.at += alias[0].length;
        continue;
      }
      items.push(this.item());
    }
    // An empty alternative matches the empty string.
    return items.length === 0 ? '""' : items.join(' ');
  }

  private item(): string {
    let atom = this.atom();
    for (;;) {
      const c = this.text[this.at];
      if (c === '*' || c === '+' || c === '?') {
        this.at++;
        atom = `(${atom})${c}`;
        continue;
      }
      this.space();
      const range = /^~\s*(\d+)(?:\s*\.\.\s*(\d+))?/.exec(this.text.slice(this.at));
      if (!range) return atom;
      this.at += range[0].length;
      atom = `(${atom}){${range[1]}${range[2] === undefined ? '' : `,${range[2]}`}}`;
    }
  }

  private atom(): string {
    const c = this.text[this.at]!;
    if (c === '(' || c === '[') {
      this.at++;
      const inner = this.alternatives();
      const close = c === '(' ? ')' : ']';
      if (this.text[this.at] !== close) throw new UnsupportedLark(`unbalanced ${c}`);
      this.at++;
      return c === '(' ? `(${inner})` : `(${inner})?`;
    }
    if (c === '"') return this.literal();
    if (c === '/') return this.regex();
    const name = /^[A-Za-z_][A-Za-z0-9_]*/.exec(this.text.slice(this.at));
    if (!name) throw new UnsupportedLark(`syntax at ${JSON.stringify(this.text.slice(this.at, this.at + 12))}`);
    this.at += name[0].length;
    if (this.text[this.at] === '{') throw new UnsupportedLark('templates');
    if (!this.rules.has(name[0])) throw new UnsupportedLark(`reference to undefined rule ${name[0]} (imports are not supported)`);
    return ebnfName(name[0]);
  }

  /** "text", "text"i (refused), or "a".."z". */
  private literal(): string {
    const first = this.quoted();
    if (this.text[this.at] === 'i') throw new UnsupportedLark('case-insensitive literals ("…"i)');
    const range = /^\s*\.\.\s*"/.exec(this.text.slice(this.at));
    if (!range) return JSON.stringify(first);
    this.at += range[0].length - 1;
    const last = this.quoted();
    if ([...first].length !== 1 || [...last].length !== 1) throw new UnsupportedLark('ranges between strings longer than one character');
    return `[${classChar(first)}-${classChar(last)}]`;
  }

  private quoted(): string {
    const end = findClose(this.text, this.at, '"');
    const body = this.text.slice(this.at, end + 1);
    this.at = end + 1;
    return JSON.parse(body) as string;
  }

  private regex(): string {
    const end = findClose(this.text, this.at, '/');
    const body = this.text.slice(this.at + 1, end);
    this.at = end + 1;
    const flags = /^[imslux]+/.exec(this.text.slice(this.at));
    if (flags) throw new UnsupportedLark(`regex flags (/…/${flags[0]})`);
    return `(${regexToEbnf(body)})`;
  }
}

/** The index of the quote closing the literal or regex that opens at `start`. */
function findClose(text: string, start: number, quote: string): number {
  for (let i = start + 1; i < text.length; i++) {
    if (text[i] === '\\') i++;
    else if (text[i] === quote) return i;
  }
  throw new UnsupportedLark(`unterminated ${quote === '"' ? 'literal' : 'regex'}`);
}

/** A character as it reads inside an EBNF character class. */
function classChar(c: string): string {
  return ['\\', ']', '-', '^'].includes(c) ? `\\${c}` : c === '\n' ? '\\n' : c === '\t' ? '\\t' : c === '\r' ? '\\r' : c;
}

/** Class escapes (\d, \w, \s) as class contents; their negations only stand alone. */
const CLASS_ESCAPES: Readonly<Record<string, string>> = { d: '0-9', w: 'a-zA-Z0-9_', s: ' \\t\\n\\r\\f\\v' };
const NEGATED_ESCAPES: Readonly<Record<string, string>> = { D: 'd', W: 'w', S: 's' };
const CHAR_ESCAPES: Readonly<Record<string, string>> = { n: '\n', t: '\t', r: '\r', f: '\f', v: '\v' };

/** A regular expression (JavaScript / Python syntax, the common part) as EBNF. */
export function regexToEbnf(source: string): string {
  const reader = new RegexReader(source);
  const out = reader.alternatives();
  if (!reader.done) throw new UnsupportedLark(`regex syntax at ${JSON.stringify(source.slice(reader.at))}`);
  return out;
}

class RegexReader {
  at = 0;

  constructor(private readonly source: string) {}

  get done(): boolean {
    return this.at >= this.source.length;
  }

  alternatives(): string {
    const alts = [this.sequence()];
    while (this.source[this.at] === '|') {
      this.at++;
      alts.push(this.sequence());
    }
    return alts.join(' | ');
  }

  private sequence(): string {
    const items: string[] = [];
    while (!this.done && this.source[this.at] !== '|' && this.source[this.at] !== ')') {
      const c = this.source[this.at]!;
      // The whole definition must match anyway: anchors at its ends say nothing more.
      if ((c === '^' && this.at === 0) || (c === '$' && this.at === this.source.length - 1)) {
        this.at++;
        continue;
      }
      if (c === '^' || c === '$') throw new UnsupportedLark('regex anchors inside the pattern');
      items.push(this.quantified(this.atom()));
    }
    return items.length === 0 ? '""' : items.join(' ');
  }

  private quantified(atom: string): string {
    let out = atom;
    for (;;) {
      const c = this.source[this.at];
      const counted = /^\{(\d+)(,(\d*))?\}/.exec(this.source.slice(this.at));
      if (c === '*' || c === '+' || c === '?') {
        this.at++;
        out = `(${out})${c}`;
      } else if (counted) {
        this.at += counted[0].length;
        out = `(${out}){${counted[1]}${counted[2] === undefined ? '' : `,${counted[3]}`}}`;
      } else {
        return out;
      }
      // A lazy or possessive mark changes which match is found, not what matches.
      if (this.source[this.at] === '?' || this.source[this.at] === '+') this.at++;
    }
  }

  private atom(): string {
    const c = this.source[this.at]!;
    this.at++;
    if (c === '.') return '[^\\n]';
    if (c === '[') return this.charClass();
    if (c === '(') {
      if (this.source[this.at] === '?') {
        const group = /^\?(:|P?<[A-Za-z_][A-Za-z0-9_]*>)/.exec(this.source.slice(this.at));
        if (!group) throw new UnsupportedLark('regex lookaround and inline flags ((?=…), (?!…), (?<=…), (?i)…)');
        this.at += group[0].length;
      }
      const inner = this.alternatives();
      if (this.source[this.at] !== ')') throw new UnsupportedLark('unbalanced ( in regex');
      this.at++;
      return `(${inner})`;
    }
    if (c === '\\') return this.escape();
    if (c === '*' || c === '+' || c === '?' || c === '{') throw new UnsupportedLark(`regex quantifier ${c} with nothing to repeat`);
    return JSON.stringify(c);
  }

  private escape(): string {
    const c = this.source[this.at++];
    if (c === undefined) throw new UnsupportedLark('regex ending in \\');
    if (CLASS_ESCAPES[c] !== undefined) return `[${CLASS_ESCAPES[c]}]`;
    if (NEGATED_ESCAPES[c] !== undefined) return `[^${CLASS_ESCAPES[NEGATED_ESCAPES[c]!]}]`;
    if (CHAR_ESCAPES[c] !== undefined) return JSON.stringify(CHAR_ESCAPES[c]);
    if (/[0-9]/.test(c)) throw new UnsupportedLark('regex backreferences');
    if (/[bBAZzGukxcpP]/.test(c)) throw new UnsupportedLark(`regex escape \\${c}`);
    return JSON.stringify(c);
  }

  /** `[…]` as an EBNF class: the same syntax, with \d \w \s spelled out. */
  private charClass(): string {
    let out = '[';
    if (this.source[this.at] === '^') {
      out += '^';
      this.at++;
    }
    let first = true;
    for (;;) {
      const c = this.source[this.at++];
      if (c === undefined) throw new UnsupportedLark('unterminated [ in regex');
      if (c === ']' && !first) return `${out}]`;
      first = false;
      if (c !== '\\') {
        out += c === ']' || c === '^' ? `\\${c}` : c === '[' ? '\\[' : c;
        continue;
      }
      const e = this.source[this.at++];
      if (e === undefined) throw new UnsupportedLark('unterminated [ in regex');
      if (CLASS_ESCAPES[e] !== undefined) out += CLASS_ESCAPES[e];
      else if (NEGATED_ESCAPES[e] !== undefined) throw new UnsupportedLark(`regex \\${e} inside a character class`);
      else if (/[bBpPux]/.test(e)) throw new UnsupportedLark(`regex escape \\${e}`);
      else out += `\\${e}`;
    }
  }
}
