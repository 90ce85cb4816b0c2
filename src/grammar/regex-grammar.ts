// A JSON Schema `pattern` (an ECMAScript regular expression, read with the u flag as ajv reads
// it) parsed into a RegexNode; what the translations ask of a node as a language (its length
// range, the whole strings a search matches, the node cut to a string length) is
// regex-language.ts's, and regex-ebnf.ts writes a node as EBNF. A lookahead in the top-level
// sequence is parsed into an intersection (or a complement) with the rest of the string, which
// only an automaton of derivatives writes (regex-derivative.ts; the callers that can,
// string-schema.ts and property-keys.ts, do). What cannot be written at all (lookbehind,
// lookaheads in groups, backreferences, word boundaries, Unicode property classes) is refused
// with the construct named. Pure.

/** A refusal of part of a pattern; the message names the construct. */
export class PatternUnsupported extends Error {}

/** Inclusive code point ranges, sorted, disjoint. */
export type CharSet = readonly (readonly [number, number])[];

export type RegexNode =
  | { readonly t: 'chars'; readonly set: CharSet }
  | { readonly t: 'seq'; readonly items: readonly RegexNode[] }
  | { readonly t: 'alt'; readonly options: readonly RegexNode[] }
  | { readonly t: 'repeat'; readonly node: RegexNode; readonly min: number; readonly max: number | null }
  // A lookahead's languages: the strings every node matches, and the strings a node does not. No
  // rule writes them; the automaton of their derivatives does (regex-derivative.ts).
  | { readonly t: 'and'; readonly nodes: readonly RegexNode[] }
  | { readonly t: 'not'; readonly node: RegexNode };

export const MAX_CODE_POINT = 0x10ffff;
const SURROGATES: readonly [number, number] = [0xd800, 0xdfff];

export function normalize(ranges: readonly (readonly [number, number])[]): CharSet {
  const sorted = [...ranges].sort((a, b) => a[0] - b[0]);
  const out: [number, number][] = [];
  for (const [lo, hi] of sorted) {
    const last = out.at(-1);
    if (last && lo <= last[1] + 1) last[1] = Math.max(last[1], hi);
    else out.push([lo, hi]);
  }
  // Lone surrogates are not characters a UTF-8 string can hold.
  return out.flatMap(([lo, hi]): [number, number][] => {
    if (hi < SURROGATES[0] || lo > SURROGATES[1]) return [[lo, hi]];
    const parts: [number, number][] = [];
    if (lo < SURROGATES[0]) parts.push([lo, SURROGATES[0] - 1]);
    if (hi > SURROGATES[1]) parts.push([SURROGATES[1] + 1, hi]);
    return parts;
  });
}

export function complement(set: CharSet): CharSet {
  const out: [number, number][] = [];
  let next = 0;
  for (const [lo, hi] of normalize(set)) {
    if (lo > next) out.push([next, lo - 1]);
    next = hi + 1;
  }
  if (next <= MAX_CODE_POINT) out.push([next, MAX_CODE_POINT]);
  return normalize(out);
}

const DIGITS: CharSet = [[0x30, 0x39]];
const WORD: CharSet = normalize([
  [0x30, 0x39],
  [0x41, 0x5a],
  [0x5f, 0x5f],
  [0x61, 0x7a],
]);
// ECMAScript's \s: WhiteSpace and LineTerminator.
const SPACE: CharSet = normalize([
  [0x09, 0x0d],
  [0x20, 0x20],
  [0xa0, 0xa0],
  [0x1680, 0x1680],
  [0x2000, 0x200a],
  [0x2028, 0x2029],
  [0x202f, 0x202f],
  [0x205f, 0x205f],
  [0x3000, 0x3000],
  [0xfeff, 0xfeff],
]);
/** `.` without the s flag: anything but a line terminator. */
const DOT: CharSet = complement([
  [0x0a, 0x0a],
  [0x0d, 0x0d],
  [0x2028, 0x2029],
]);
const ANY: CharSet = complement([]);
/** Any string: the unanchored side of a pattern, and the rest of the string a lookahead sees. */
export const ANY_REPEAT: RegexNode = { t: 'repeat', node: { t: 'chars', set: ANY }, min: 0, max: null };

const one = (code: number): RegexNode => ({ t: 'chars', set: [[code, code]] });

/** A recursive-descent reader of the pattern. */
class PatternReader {
  private at = 0;
  constructor(
    private readonly source: string,
    /** Whether the pattern is the whole string (a regex spec) rather than searched for in it (JSON Schema): then a lookahead's rest ends where its alternative does. */
    private readonly wholeString: boolean,
  ) {}

  parse(): { node: RegexNode; anchoredStart: boolean; anchoredEnd: boolean }[] {
    const options = this.alternatives(true);
    if (this.at < this.source.length) throw new PatternUnsupported(`unbalanced ")" at ${this.at}`);
    return options;
  }

  /** Top level: each alternative with its own ^ and $. */
  private alternatives(top: boolean): { node: RegexNode; anchoredStart: boolean; anchoredEnd: boolean }[] {
    const out: { node: RegexNode; anchoredStart: boolean; anchoredEnd: boolean }[] = [];
    for (;;) {
      // A top-level alternative that is one group (`^$|(^\S+$)`): its own alternatives are top-level ones, anchors and all.
      const grouped = top ? this.wholeGroup() : null;
      if (grouped !== null) {
        out.push(...grouped);
        if (this.peek() !== '|') return out;
        this.at++;
        continue;
      }
      let anchoredStart = false;
      if (top && this.peek() === '^') {
        this.at++;
        anchoredStart = true;
      }
      const items: RegexNode[] = [];
      const lookaheads: Lookahead[] = [];
      let anchoredEnd = false;
      while (this.at < this.source.length && this.peek() !== '|' && this.peek() !== ')') {
        if (this.peek() === '$' && top) {
          this.at++;
          anchoredEnd = true;
          // (A `)` after it closes a group that is a whole alternative: wholeGroup; anywhere else parse() finds it unbalanced.)
          if (this.at < this.source.length && this.peek() !== '|' && this.peek() !== ')') throw new PatternUnsupported('"$" before the end of the pattern');
          break;
        }
        if (top && /^\(\?[=!]/.test(this.source.slice(this.at))) {
          lookaheads.push(this.lookahead(items.length, (anchoredStart || this.wholeString) && items.length === 0));
          continue;
        }
        // `^(?!…)^…`: a second anchor where nothing but lookaheads came before says nothing more.
        if (top && this.peek() === '^' && anchoredStart && items.length === 0 && lookaheads.length > 0) {
          this.at++;
          continue;
        }
        items.push(this.quantified());
      }
      if (lookaheads.length === 0) out.push({ node: { t: 'seq', items }, anchoredStart, anchoredEnd });
      // The tail an unanchored end would get goes inside: a lookahead sees the whole rest of the string.
      else out.push({ node: withLookaheads(anchoredEnd || this.wholeString ? items : [...items, ANY_REPEAT], lookaheads), anchoredStart, anchoredEnd: true });
      if (this.peek() !== '|') return out;
      this.at++;
    }
  }

  /** The alternatives of a group that makes up a whole top-level alternative, read as top-level ones; null (nothing read) where the alternative is more than the group. */
  private wholeGroup(): { node: RegexNode; anchoredStart: boolean; anchoredEnd: boolean }[] | null {
    const start = this.at;
    const open = /^\((\?:|\?<[A-Za-z_$][\w$]*>)?/.exec(this.source.slice(this.at));
    if (open === null || (this.source[this.at + 1] === '?' && open[1] === undefined)) return null;
    // Only a group that closes where its alternative ends is read twice over, so nested groups cost no more than once each.
    // Only one holding an anchor: an unanchored group stays one item (its alternatives each with loops beside them would make far larger automata).
    const close = this.closingParenthesis(this.at);
    if (close === null || !close.anchored || (close.at + 1 < this.source.length && this.source[close.at + 1] !== '|')) return null;
    this.at += open[0].length;
    try {
      const inner = this.alternatives(true);
      if (this.peek() === ')' && (this.at + 1 === this.source.length || this.source[this.at + 1] === '|')) {
        this.at++;
        return inner;
      }
    } catch (error) {
      if (!(error instanceof PatternUnsupported)) throw error;
    }
    this.at = start;
    return null;
  }

  /** Where the `)` closing the group opened at `from` stands (escapes and classes skipped), and whether an anchor stands inside; null where none closes it. */
  private closingParenthesis(from: number): { readonly at: number; readonly anchored: boolean } | null {
    let depth = 0;
    let anchored = false;
    for (let i = from; i < this.source.length; i++) {
      const c = this.source[i];
      if (c === '\\') i++;
      else if (c === '[') {
        for (i++; i < this.source.length && this.source[i] !== ']'; i++) if (this.source[i] === '\\') i++;
      } else if (c === '^' || c === '$') anchored = true;
      else if (c === '(') depth++;
      else if (c === ')' && --depth === 0) return { at: i, anchored };
    }
    return null;
  }

  /**
   * A lookahead in the pattern's top-level sequence, before the item at `at`: the language the rest
   * of the string must (`(?=`) or must not (`(?!`) start with. Each of its alternatives may end
   * with `$` (then it is the whole rest) and, where it stands at the anchored start, begin with `^`.
   */
  private lookahead(at: number, atStart: boolean): Lookahead {
    const negative = this.source[this.at + 2] === '!';
    this.at += 3;
    const options: RegexNode[] = [];
    for (;;) {
      if (atStart && this.peek() === '^') this.at++;
      const items: RegexNode[] = [];
      let anchoredEnd = false;
      while (this.at < this.source.length && this.peek() !== '|' && this.peek() !== ')') {
        if (this.peek() === '$') {
          this.at++;
          anchoredEnd = true;
          if (this.peek() !== '|' && this.peek() !== ')') throw new PatternUnsupported('"$" before the end of a lookahead');
          break;
        }
        items.push(this.quantified());
      }
      options.push({ t: 'seq', items: anchoredEnd ? items : [...items, ANY_REPEAT] });
      if (this.peek() !== '|') break;
      this.at++;
    }
    if (this.peek() !== ')') throw new PatternUnsupported('an unclosed lookahead');
    this.at++;
    const language: RegexNode = options.length === 1 ? options[0]! : { t: 'alt', options };
    return { at, language: negative ? { t: 'not', node: language } : language };
  }

  private peek(): string | undefined {
    return this.source[this.at];
  }

  private quantified(): RegexNode {
    const atom = this.atom();
    const c = this.peek();
    let min: number;
    let max: number | null;
    if (c === '*') [min, max] = [0, null];
    else if (c === '+') [min, max] = [1, null];
    else if (c === '?') [min, max] = [0, 1];
    else if (c === '{') {
      const match = /^\{(\d+)(,(\d*))?\}/.exec(this.source.slice(this.at));
      if (!match) return atom;
      min = Number(match[1]);
      max = match[2] === undefined ? min : match[3] === '' ? null : Number(match[3]);
      if (max !== null && max < min) throw new PatternUnsupported(`quantifier ${match[0]} has its bounds out of order`);
      this.at += match[0].length - 1;
    } else return atom;
    this.at++;
    // A lazy quantifier matches the same strings.
    if (this.peek() === '?') this.at++;
    if (this.peek() === '*' || this.peek() === '+' || this.peek() === '?') throw new PatternUnsupported('a quantifier after a quantifier');
    return { t: 'repeat', node: atom, min, max };
  }

  private atom(): RegexNode {
    const c = this.source[this.at++]!;
    switch (c) {
      case '(': {
        if (this.source.startsWith('?:', this.at)) this.at += 2;
        else if (/^\?<[A-Za-z_$][\w$]*>/.test(this.source.slice(this.at))) this.at = this.source.indexOf('>', this.at) + 1;
        else if (this.peek() === '?') throw new PatternUnsupported('lookbehind assertions ((?<=, (?<!), and lookaheads inside a group or quantifier');
        const options = this.alternatives(false);
        if (this.peek() !== ')') throw new PatternUnsupported('an unclosed group');
        this.at++;
        return options.length === 1 ? options[0]!.node : { t: 'alt', options: options.map((o) => o.node) };
      }
      case '[':
        return { t: 'chars', set: this.charClass() };
      case '.':
        return { t: 'chars', set: DOT };
      case '\\':
        return this.escape(false) as RegexNode;
      case '^':
      case '$':
        throw new PatternUnsupported(`"${c}" inside the pattern (anchors only at its start and end)`);
      case '*':
      case '+':
      case '?':
        throw new PatternUnsupported(`a quantifier "${c}" with nothing to repeat`);
      default: {
        const code = this.source.codePointAt(this.at - 1)!;
        if (code > 0xffff) this.at++;
        return one(code);
      }
    }
  }

  /** An escape after its backslash: a node, or (inside a class) a set or a single code point. */
  private escape(inClass: boolean): RegexNode | CharSet | number {
    const c = this.source[this.at++];
    if (c === undefined) throw new PatternUnsupported('a trailing backslash');
    const sets: Record<string, CharSet> = { d: DIGITS, D: complement(DIGITS), w: WORD, W: complement(WORD), s: SPACE, S: complement(SPACE) };
    if (sets[c]) return inClass ? sets[c]! : { t: 'chars', set: sets[c]! };
    const simple: Record<string, number> = { t: 9, n: 10, v: 11, f: 12, r: 13, '0': 0 };
    let code: number | undefined = simple[c];
    if (c === 'b' && inClass) code = 8;
    else if (c === 'b' || c === 'B') throw new PatternUnsupported('word boundaries (\\b, \\B)');
    else if (c === 'p' || c === 'P') throw new PatternUnsupported('Unicode property classes (\\p{…})');
    else if (/[1-9]/.test(c)) throw new PatternUnsupported('backreferences (\\1 …)');
    else if (c === 'k') throw new PatternUnsupported('named backreferences (\\k<…>)');
    else if (c === 'x') code = this.hex(/^[0-9a-fA-F]{2}/);
    else if (c === 'u') {
      if (this.peek() === '{') {
        const end = this.source.indexOf('}', this.at);
        code = Number.parseInt(this.source.slice(this.at + 1, end), 16);
        this.at = end + 1;
      } else code = this.hex(/^[0-9a-fA-F]{4}/);
    } else if (c === 'c') {
      const letter = this.source[this.at++] ?? '';
      if (!/[A-Za-z]/.test(letter)) throw new PatternUnsupported('a \\c without a letter');
      code = letter.charCodeAt(0) % 32;
    } else if (code === undefined) code = this.source.codePointAt(this.at - 1)!;
    if (code > 0xffff && c !== 'u') this.at++;
    return inClass ? code : one(code);
  }

  private hex(shape: RegExp): number {
    const match = shape.exec(this.source.slice(this.at));
    if (!match) throw new PatternUnsupported('a malformed hexadecimal escape');
    this.at += match[0].length;
    return Number.parseInt(match[0], 16);
  }

  private charClass(): CharSet {
    const negated = this.peek() === '^';
    if (negated) this.at++;
    const ranges: [number, number][] = [];
    while (this.peek() !== ']') {
      if (this.at >= this.source.length) throw new PatternUnsupported('an unclosed character class');
      const lo = this.classAtom();
      if (typeof lo !== 'number') {
        ranges.push(...lo.map(([a, b]): [number, number] => [a, b]));
        continue;
      }
      if (this.peek() === '-' && this.source[this.at + 1] !== ']' && this.at + 1 < this.source.length) {
        this.at++;
        const hi = this.classAtom();
        if (typeof hi !== 'number') throw new PatternUnsupported('a class escape as a range bound');
        if (hi < lo) throw new PatternUnsupported('a character range out of order');
        ranges.push([lo, hi]);
      } else ranges.push([lo, lo]);
    }
    this.at++;
    return negated ? complement(ranges) : normalize(ranges);
  }

  private classAtom(): CharSet | number {
    const c = this.source[this.at++]!;
    if (c === '\\') return this.escape(true) as CharSet | number;
    const code = this.source.codePointAt(this.at - 1)!;
    if (code > 0xffff) this.at++;
    return code;
  }
}

/** A lookahead of the top-level sequence: before its item `at`, the language the rest of the string must be in. */
interface Lookahead {
  readonly at: number;
  readonly language: RegexNode;
}

/** The items with each lookahead's language intersected with the rest of the string from where it stands. */
function withLookaheads(items: readonly RegexNode[], lookaheads: readonly Lookahead[]): RegexNode {
  let rest: RegexNode = { t: 'seq', items: items.slice(lookaheads.at(-1)!.at) };
  for (let k = lookaheads.length - 1; k >= 0; k--) {
    const { at, language } = lookaheads[k]!;
    const next = k > 0 ? lookaheads[k - 1]!.at : 0;
    rest = { t: 'seq', items: [...items.slice(next, at), { t: 'and', nodes: [rest, language] }] };
  }
  return rest;
}

/** The pattern's alternatives, each with whether it is anchored at either end; with `wholeString` (a regex spec) each is to match the whole string. */
export function parsePattern(pattern: string, { wholeString = false } = {}): { node: RegexNode; anchoredStart: boolean; anchoredEnd: boolean }[] {
  return new PatternReader(pattern, wholeString).parse();
}
