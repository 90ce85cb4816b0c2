// `string` schemas: any string, lengths (one rule per character counted, or none where the
// string guard counts: guard-plan.ts), `pattern` through
// regex-grammar.ts, and the enforced `format`s (string-formats.ts), lengths beside a pattern or
// format where they can be written into it exactly. Pure.

import { type AutomatonState, intersection } from '../regex-derivative.js';
import { automatonBodies, JSON_ESCAPE, JSON_PLAIN_CHAR, jsonCharParts, jsonCharSet, regexEbnf } from '../regex-ebnf.js';
import { PatternUnsupported, type RegexNode } from '../regex-grammar.js';
import { hasLookahead, patternLanguage, sequence, starSet, withLength } from '../regex-language.js';
import { STRING_FORMATS, stringFormat } from '../string-formats.js';
import type { GrammarRules } from './grammar-rules.js';
import { NOT_PATTERN } from './negated-types.js';
import { isGuardedLength } from './string-bounds.js';
import { liftedPattern, stringLengths } from './string-lengths.js';
import { pointer, type SchemaObject, SchemaUnsupported } from './schema-model.js';
import type { Translation } from './translation.js';

/**
 * Bounds on what length-bounded strings may cost. Each character counted is a grammar rule, and the
 * translation runs on the grammar worker before any compile bound applies: `maxLength: 262144`
 * (a JSONSchemaBench schema) wrote 50 MB of grammar, `maxLength: 1e9` would exhaust its memory.
 * Compiling costs more still (~0.1 s a rule on a 152 K vocabulary), so a length past a few hundred
 * is refused by --structured-outputs-compile-timeout-secs anyway; these limits keep the refusal
 * cheap and leave longer bounds to a server run without that bound.
 */
export const MAX_COUNTED_LENGTH = 1024;
export const MAX_COUNTED_RULES = 8192;
/** The most states a format beside a pattern, or a pattern's lookahead, may take (one grammar rule each). */
export const MAX_INTERSECTION_STATES = 1024;

export function stringSchema(t: Translation, node: SchemaObject, path: string): string | null {
  // A pattern's count counts as a length (string-lengths.ts): where the guard holds the lengths, the pattern is written with its count open.
  const lengths = stringLengths(node);
  const declaredMin = lengths?.min ?? 0;
  const declaredMax = lengths?.max ?? null;
  if (declaredMax !== null && declaredMax < declaredMin) return null;
  // Lengths the guard counts (guard-plan.ts has checked that the text tells it which bound holds) are not written here.
  const guarded = t.stringsGuarded && isGuardedLength(declaredMin, declaredMax, patternsOf(node));
  const minLength = guarded ? 0 : declaredMin;
  const maxLength = guarded ? null : declaredMax;
  let language: RegexNode | null = null;
  const format = typeof node['format'] === 'string' ? stringFormat(node['format']) : { anyString: true as const };
  if ('refusedBy' in format)
    throw new SchemaUnsupported(
      'format',
      pointer(path, 'format'),
      `format ${JSON.stringify(node['format'])} is not enforced (defined by ${format.refusedBy}; enforced: ${Object.keys(STRING_FORMATS).join(', ')})`,
    );
  const languages: RegexNode[] = [];
  if ('pattern' in format) languages.push(patternLanguage(format.pattern));
  if (typeof node['pattern'] === 'string') {
    try {
      languages.push((guarded ? liftedPattern(node['pattern'])?.node : undefined) ?? patternLanguage(node['pattern']));
    } catch (error) {
      if (error instanceof PatternUnsupported) throw new SchemaUnsupported('pattern', pointer(path, 'pattern'), error.message);
      throw error;
    }
  }
  const negated = node[NOT_PATTERN];
  if (typeof negated === 'string') {
    // The guard's lengths would not know of the complement, so a string it counts could be stranded inside the excluded language.
    if (guarded) throw new SchemaUnsupported('not', pointer(path, 'not'), 'a pattern excluded beside lengths the guard counts is not translated');
    try {
      languages.push({ t: 'not', node: patternLanguage(negated) });
    } catch (error) {
      if (error instanceof PatternUnsupported) throw new SchemaUnsupported('not', pointer(path, 'not', 'pattern'), error.message);
      throw error;
    }
  }
  // Two languages, or a lookahead's intersection or complement: only their automaton writes them.
  if (languages.length === 2 || languages.some(hasLookahead)) return formatAndPattern(t, languages, minLength, maxLength, path, 'pattern' in format);
  language = languages[0] ?? null;
  if (language === null) {
    if (minLength === 0 && maxLength === null) return t.rules.anyString();
    const counted = maxLength ?? minLength;
    const keyword = maxLength !== null ? 'maxLength' : 'minLength';
    if (counted > MAX_COUNTED_LENGTH)
      throw new SchemaUnsupported(keyword, pointer(path, keyword), `${counted} is above the ${MAX_COUNTED_LENGTH} characters a length is enforced to (one grammar rule per character counted)`);
    if (t.rules.size + counted > MAX_COUNTED_RULES)
      throw new SchemaUnsupported(keyword, pointer(path, keyword), `the schema's length-bounded strings together need more than ${MAX_COUNTED_RULES} grammar rules (one per character counted)`);
    return boundedString(t.rules, minLength, maxLength);
  }
  if (minLength > 0 || maxLength !== null) {
    const bounded = withLength(language, minLength, maxLength);
    // Lengths the pattern's own items cannot carry (`[a-zA-Z]{3}` unanchored, exactly 3 long; a format's pattern and a minLength): the automaton of both.
    if (bounded === null) return formatAndPattern(t, [language], minLength, maxLength, path, 'pattern' in format);
    language = bounded;
  }
  let rest: string | null;
  try {
    rest = closedStringEbnf(t.rules, language);
  } catch (error) {
    if (error instanceof PatternUnsupported) throw new SchemaUnsupported('pattern' in format ? 'format' : 'pattern', pointer(path, 'pattern' in format ? 'format' : 'pattern'), error.message);
    throw error;
  }
  return rest === null ? null : t.rules.share('string_pattern', `"\\"" ${t.rules.share('string_pattern_rest', rest)}`);
}

/**
 * A string's content in the node's language, then its closing quote, as a rule's body (null: no
 * string matches). A trailing `S*` is a right-recursive rule, as every open string here is:
 * xgrammar 0.1.27 computes a rule's masks in microseconds where `(c)*` took ~200 ms a mask, and
 * each such loop inside a rule costs its compile a pass over the vocabulary. One character before
 * it is written as the body's own alternatives (jsonCharParts), not a parenthesized choice.
 */
export function closedStringEbnf(rules: GrammarRules, node: RegexNode): string | null {
  if (node.t === 'alt') {
    const options = node.options.map((option) => closedStringEbnf(rules, option)).filter((text) => text !== null);
    return options.length === 0 ? null : options.join(' | ');
  }
  const items = node.t === 'seq' ? node.items : [node];
  const set = items.length === 0 ? null : starSet(items.at(-1)!);
  if (set === null) {
    const text = regexEbnf(node);
    return text === null ? null : `${text} "\\""`;
  }
  const char = jsonCharParts(set);
  const tail = char.length === 0 ? '"\\""' : rules.charsThenQuote(char);
  if (items.length === 1) return tail;
  const first = items[0]!;
  const head = items.length === 2 && first.t === 'chars' ? jsonCharParts(first.set) : [regexEbnf(sequence(items.slice(0, -1)))];
  const written = head.filter((part) => part !== null);
  return written.length === 0 ? null : written.map((part) => `${part} ${tail}`).join(' | ');
}

/** The patterns a string schema's values must match: its `pattern` and its format's, as guard-plan.ts lists them. */
function patternsOf(node: SchemaObject): string[] {
  const patterns = new Set<string>();
  if (typeof node['pattern'] === 'string') patterns.add(node['pattern']);
  const format = typeof node['format'] === 'string' ? stringFormat(node['format']) : null;
  if (format !== null && 'pattern' in format) patterns.add(format.pattern);
  return [...patterns].sort();
}

/**
 * A string in a format that also matches a pattern, or matches a pattern with a lookahead (and its
 * lengths): the intersection of their languages as an automaton (regex-derivative.ts), one rule
 * per state, each naming the characters that lead on; refused by name past MAX_INTERSECTION_STATES.
 */
function formatAndPattern(t: Translation, languages: RegexNode[], minLength: number, maxLength: number | null, path: string, withFormat: boolean): string | null {
  if (minLength > 0 || maxLength !== null) languages.push(lengthLanguage(minLength, maxLength));
  const states = intersection(languages, MAX_INTERSECTION_STATES);
  if (states === null && withFormat)
    throw new SchemaUnsupported('format', pointer(path, 'format'), `together with pattern${languages.length > 2 ? ' and lengths' : ''} it needs more than ${MAX_INTERSECTION_STATES} grammar rules`);
  if (states === null)
    throw new SchemaUnsupported(
      'pattern',
      pointer(path, 'pattern'),
      `its lookahead${minLength > 0 || maxLength !== null ? ' with the lengths' : ''} needs more than ${MAX_INTERSECTION_STATES} grammar rules`,
    );
  return automatonString(t, states, path);
}

/** Any string of minLength..maxLength characters, as a regex node. */
export const lengthLanguage = (minLength: number, maxLength: number | null): RegexNode => ({ t: 'repeat', node: { t: 'chars', set: [[0, 0x10ffff]] }, min: minLength, max: maxLength });

/** A JSON string whose content the automaton accepts: one rule per state, each naming the characters that lead on (null: it accepts nothing). */
export function automatonString(t: Translation, states: readonly AutomatonState[], path: string): string | null {
  if (states.length === 0) return null;
  const names = states.map(() => t.rules.reserve('string_state'));
  let bodies: string[];
  try {
    bodies = automatonBodies(states, jsonCharSet, (state) => names[state]!, '"\\""');
  } catch (error) {
    if (error instanceof PatternUnsupported) throw new SchemaUnsupported('pattern', pointer(path, 'pattern'), error.message);
    throw error;
  }
  for (const [i, body] of bodies.entries()) t.rules.define(names[i]!, body);
  return `("\\"" ${names[0]})`;
}

/** A string of minLength..maxLength characters (maxLength null: no bound), one rule per count read so far; one set of rules per bounds. */
function boundedString(rules: GrammarRules, minLength: number, maxLength: number | null): string {
  return rules.once(`string_len ${minLength},${maxLength}`, () => countedString(rules, minLength, maxLength));
}

function countedString(rules: GrammarRules, minLength: number, maxLength: number | null): string {
  const top = maxLength ?? minLength;
  const names = Array.from({ length: top + 1 }, (_, i) => rules.reserve(`string_len_${i}`));
  for (let i = 0; i <= top; i++) {
    const parts: string[] = [];
    if (i >= minLength) parts.push(i === top && maxLength === null ? rules.stringRest() : '"\\""');
    if (i < top) parts.push(`${JSON_PLAIN_CHAR} ${names[i + 1]}`, `"\\\\" ${JSON_ESCAPE} ${names[i + 1]}`);
    rules.define(names[i]!, parts.join(' | '));
  }
  return `("\\"" ${names[0]})`;
}
