// A parsed pattern (regex-grammar.ts) written as EBNF: each character the way JSON.stringify
// writes it inside a string (a quote and a backslash escaped, control characters as \n, \t, … or
// \u00XX, everything else raw), so no raw control character can appear inside the string; or, for
// a regex spec (whose output is the text itself), each character as itself. Also the classes
// xgrammar 0.1.27 reads as written (plainCharClass). Pure.

import { type AutomatonState, intersection } from './regex-derivative.js';
import { type CharSet, complement, MAX_CODE_POINT, normalize, PatternUnsupported, parsePattern, type RegexNode } from './regex-grammar.js';
import { hasLookahead } from './regex-language.js';

const hex = (code: number, digits: number): string => code.toString(16).toUpperCase().padStart(digits, '0');
const classChar = (code: number): string => (code <= 0xffff ? `\\u${hex(code, 4)}` : `\\U${hex(code, 8)}`);
const SHORT_ESCAPES: Readonly<Record<number, string>> = { 8: 'b', 9: 't', 10: 'n', 12: 'f', 13: 'r' };

/** How JSON.stringify writes one character inside a string, as an EBNF literal. */
function jsonCharLiteral(code: number): string {
  if (code === 0x22) return '"\\\\\\""';
  if (code === 0x5c) return '"\\\\\\\\"';
  const short = SHORT_ESCAPES[code];
  if (short) return `"\\\\${short}"`;
  return `"\\\\u${code.toString(16).padStart(4, '0')}"`;
}

const rangeText = ([lo, hi]: readonly [number, number]): string => (lo === hi ? classChar(lo) : `${classChar(lo)}-${classChar(hi)}`);

/**
 * Printable characters (no quote, backslash or control character) as EBNF. xgrammar 0.1.27 reads
 * a class element at or below U+00FF as a byte and truncates one above to its low byte
 * ([\u0100-\u07FF] matched "a", [^\u2028] refused "("), while a negated class of ASCII
 * exclusions matches whole characters. So: the ASCII part is a class; a set holding every
 * non-ASCII character is the negation of its ASCII gaps;
 * a few non-ASCII characters are literals; and any other non-ASCII part is written as the UTF-8
 * byte sequences of its code points, each byte position a class of bytes (utf8ByteRanges).
 */
function plainCharClass(plain: readonly (readonly [number, number])[]): string | null {
  if (plain.length === 0) return null;
  const ascii = plain.filter(([lo]) => lo < 0x80).map(([lo, hi]): [number, number] => [lo, Math.min(hi, 0x7f)]);
  const nonAscii = normalize(plain.filter(([, hi]) => hi >= 0x80).map(([lo, hi]): [number, number] => [Math.max(lo, 0x80), hi]));
  if (complement([...nonAscii, [0, 0x7f]]).length === 0) {
    // Every non-ASCII character: the negation of the ASCII gaps alone. (`.`, every one but U+2028 /
    // U+2029, takes the byte sequences below: a choice of ten, which measured no slower to compile or match.)
    const gaps = complement([...ascii, [0x80, MAX_CODE_POINT]]).filter(([lo]) => lo < 0x80);
    return `[^${gaps.map(rangeText).join('')}]`;
  }
  const parts: string[] = [];
  if (ascii.length > 0) parts.push(`[${ascii.map(rangeText).join('')}]`);
  const count = nonAscii.reduce((n, [lo, hi]) => n + hi - lo + 1, 0);
  if (count <= 64) for (const [lo, hi] of nonAscii) for (let code = lo; code <= hi; code++) parts.push(`"${code <= 0xffff ? `\\u${hex(code, 4)}` : `\\U${hex(code, 8)}`}"`);
  else for (const [lo, hi] of nonAscii) for (const sequence of utf8ByteRanges(lo, hi)) parts.push(sequence.map(byteClass).join(' '));
  return parts.length === 1 ? parts[0]! : `(${parts.join(' | ')})`;
}

/** The UTF-8 encoding of a code point, as bytes. */
function utf8Bytes(code: number): number[] {
  if (code < 0x80) return [code];
  if (code < 0x800) return [0xc0 | (code >> 6), 0x80 | (code & 0x3f)];
  if (code < 0x10000) return [0xe0 | (code >> 12), 0x80 | ((code >> 6) & 0x3f), 0x80 | (code & 0x3f)];
  return [0xf0 | (code >> 18), 0x80 | ((code >> 12) & 0x3f), 0x80 | ((code >> 6) & 0x3f), 0x80 | (code & 0x3f)];
}

/**
 * The code points lo..hi as UTF-8 byte sequences, each a range of bytes per position: the range
 * is split where the encoded length changes and where a lower byte's range would not be full, so
 * each sequence's bytes vary independently (the RE2 construction).
 */
export function utf8ByteRanges(lo: number, hi: number): (readonly [number, number])[][] {
  for (const max of [0x7f, 0x7ff, 0xffff]) if (lo <= max && hi > max) return [...utf8ByteRanges(lo, max), ...utf8ByteRanges(max + 1, hi)];
  for (let i = 1; i < 4; i++) {
    const low = (1 << (6 * i)) - 1;
    if ((lo & ~low) === (hi & ~low)) continue;
    if ((lo & low) !== 0) return [...utf8ByteRanges(lo, lo | low), ...utf8ByteRanges((lo | low) + 1, hi)];
    if ((hi & low) !== low) return [...utf8ByteRanges(lo, (hi & ~low) - 1), ...utf8ByteRanges(hi & ~low, hi)];
  }
  const from = utf8Bytes(lo);
  const to = utf8Bytes(hi);
  return [from.map((byte, i): readonly [number, number] => [byte, to[i]!])];
}

/**
 * One byte position as an xgrammar class of bytes. A class of one element is read as the code
 * point, not the byte ([\xC2] is "Â"), so a single byte gets 0xFF beside it, a byte no UTF-8 text
 * holds (the matcher's UTF-8 guard masks it everywhere).
 */
const byteClass = ([lo, hi]: readonly [number, number]): string => (lo === hi ? `[\\x${hex(lo, 2)}\\xFF]` : `[\\x${hex(lo, 2)}-\\x${hex(hi, 2)}]`);

/** One character of the set, as the EBNF for its JSON text inside a string. */
export function jsonCharSet(set: CharSet): string | null {
  const parts = jsonCharParts(set);
  if (parts.length === 0) return null;
  return parts.length === 1 ? parts[0]! : `(${parts.join(' | ')})`;
}

/**
 * The same as alternatives: the plain characters' class, then the escaped ones (none: no
 * character). A rule that lists them as its own alternatives, each followed by the rest, compiles
 * faster in xgrammar 0.1.27 than one holding the parenthesized choice.
 */
export function jsonCharParts(set: CharSet): string[] {
  const plain: [number, number][] = [];
  const escaped: string[] = [];
  for (const [lo, hi] of normalize(set)) {
    for (let code = lo; code <= Math.min(hi, 0x1f); code++) escaped.push(jsonCharLiteral(code));
    let from = Math.max(lo, 0x20);
    for (const special of [0x22, 0x5c]) {
      if (special >= from && special <= hi) {
        if (special > from) plain.push([from, special - 1]);
        escaped.push(jsonCharLiteral(special));
        from = special + 1;
      }
    }
    if (from <= hi) plain.push([from, hi]);
  }
  const parts = [...escaped];
  const plainClass = plainCharClass(plain);
  if (plainClass !== null) parts.unshift(plainClass);
  return parts;
}

/** What may follow a backslash inside a JSON string: JSON's escapes, \\u outside the surrogates (one \\u, one character). */
export const JSON_ESCAPE = String.raw`(["\\/bfnrt] | "u" ([0-9A-Ca-c] [0-9A-Fa-f]{3} | [Dd] [0-7] [0-9A-Fa-f]{2} | [E-Fe-f] [0-9A-Fa-f]{3}))`;
/** One unescaped character inside a JSON string. */
export const JSON_PLAIN_CHAR = String.raw`[^"\\\u0000-\u001F]`;

/** One character of the set as itself (a regex spec's output is the text, not a JSON string's content). */
const rawCharSet = (set: CharSet): string | null => plainCharClass(normalize(set));

export type CharSetEbnf = (set: CharSet) => string | null;

/** The most states (grammar rules) a lookahead's automaton may take here, as a string value's may. */
export const MAX_LOOKAHEAD_STATES = 1024;

function nodeEbnf(node: RegexNode, charSet: CharSetEbnf): string | null {
  switch (node.t) {
    case 'chars':
      return charSet(node.set);
    case 'seq': {
      const parts: string[] = [];
      for (const item of node.items) {
        const text = nodeEbnf(item, charSet);
        if (text === null) return null;
        if (text !== '""') parts.push(text);
      }
      return parts.length === 0 ? '""' : parts.length === 1 ? parts[0]! : `(${parts.join(' ')})`;
    }
    case 'alt': {
      const parts = node.options.map((option) => nodeEbnf(option, charSet)).filter((p): p is string => p !== null);
      return parts.length === 0 ? null : parts.length === 1 ? parts[0]! : `(${parts.join(' | ')})`;
    }
    case 'repeat': {
      const inner = nodeEbnf(node.node, charSet);
      if (inner === null) return node.min === 0 ? '""' : null;
      if (node.max === 0) return '""';
      const { min, max } = node;
      const quantifier = min === 0 && max === null ? '*' : min === 1 && max === null ? '+' : min === 0 && max === 1 ? '?' : max === null ? `{${min},}` : min === max ? `{${min}}` : `{${min},${max}}`;
      return `(${inner})${quantifier}`;
    }
    case 'and':
    case 'not':
      // Only reached under another node: top-level lookaheads go through automatonEbnf.
      throw new PatternUnsupported('a lookahead inside a group or quantifier');
  }
}

/** A string's content matching the node, as EBNF (null: no string does). */
export const regexEbnf = (node: RegexNode): string | null => nodeEbnf(node, jsonCharSet);

/** A whole pattern option as EBNF: a plain node as an expression, one with a lookahead as its automaton's rules named from `prefix`; null: no string matches. */
export function optionEbnf(node: RegexNode, asJson: boolean, prefix: string): { expression: string; rules: string[] } | null {
  const charSet = asJson ? jsonCharSet : rawCharSet;
  if (!hasLookahead(node)) {
    const expression = nodeEbnf(node, charSet);
    return expression === null ? null : { expression, rules: [] };
  }
  return automatonEbnf(node, charSet, prefix);
}

/**
 * A node with a lookahead (an intersection or complement: regex-grammar.ts) as EBNF: the automaton
 * of its derivatives (regex-derivative.ts), one rule per state named from `prefix`. Refused past
 * MAX_LOOKAHEAD_STATES.
 */
function automatonEbnf(node: RegexNode, charSet: CharSetEbnf, prefix: string): { expression: string; rules: string[] } | null {
  const states = intersection([node], MAX_LOOKAHEAD_STATES);
  if (states === null) throw new PatternUnsupported(`a lookahead needing more than ${MAX_LOOKAHEAD_STATES} grammar rules`);
  if (states.length === 0) return null;
  const bodies = automatonBodies(states, charSet, (i) => `${prefix}${i}`, '""');
  return { expression: `${prefix}0`, rules: bodies.map((body, i) => `${prefix}${i} ::= ${body}`) };
}

/**
 * The body of each state's rule: the characters that lead on, each followed by the rule of the
 * state they lead to (`name`), and `end` where the state accepts (or where nothing is left to
 * write: every state kept leads to an end, regex-derivative.ts leaves the others out). The
 * automaton writer of lookaheads here and of a JSON string's languages (string-schema.ts).
 */
export function automatonBodies(states: readonly AutomatonState[], charSet: CharSetEbnf, name: (state: number) => string, end: string): string[] {
  return states.map((state) => {
    const parts = state.accepting ? [end] : [];
    for (const edge of state.edges) {
      const chars = charSet(edge.set);
      if (chars !== null) parts.push(`${chars} ${name(edge.to)}`);
    }
    return parts.length > 0 ? parts.join(' | ') : end;
  });
}

/**
 * A regex spec (vLLM's `regex`, a Responses custom tool's regex format) as EBNF: the whole output
 * matches it (anchors are implied). Translated here rather than by xgrammar's regex converter,
 * which truncates non-ASCII characters to their low byte ("é" became the lone byte E9, so the
 * output could never be valid UTF-8) and reads non-ASCII class ranges as byte ranges.
 */
export function regexSpecGrammar(pattern: string): string {
  const options = parsePattern(pattern, { wholeString: true })
    .map(({ node }, i) => optionEbnf(node, false, `lookahead${i}_`))
    .filter((option) => option !== null);
  if (options.length === 0) throw new PatternUnsupported('a pattern no string matches');
  return [`root ::= ${options.map((o) => o.expression).join(' | ')}`, ...options.flatMap((o) => o.rules)].join('\n');
}
