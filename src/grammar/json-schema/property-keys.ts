// What `patternProperties` and `propertyNames` say about an object's keys, for object-schema.ts:
// which named properties may appear (propertyNames), what else a named property's value must meet
// (the patternProperties whose pattern its name matches — both hold, as allOf), and the grammar
// for the keys besides the named ones — a pattern's keys except the named ones, written exactly
// with regex derivatives (regex-derivative.ts; a pattern with a lookahead as their automaton). What a grammar cannot state exactly is refused:
// additionalProperties other than false beside patternProperties (the keys no pattern matches
// would need the patterns' complement), patterns whose schemas differ (a key both match would
// need both), and propertyNames other than a pattern or a list of names (enum / const). Pure.

import { derivative, intersection, matchesNothing, startingOutside } from '../regex-derivative.js';
import { jsonCharSet } from '../regex-ebnf.js';
import { PatternUnsupported, type RegexNode } from '../regex-grammar.js';
import { hasLookahead, nullable, patternLanguage } from '../regex-language.js';
import { ebnfLiteral } from '../grammar-spec.js';
import type { GrammarRules } from './grammar-rules.js';
import { ANNOTATIONS, isObject, type Json, pointer, SchemaUnsupported, type SchemaObject } from './schema-model.js';
import { automatonString, closedStringEbnf, MAX_INTERSECTION_STATES } from './string-schema.js';
import type { Translation } from './translation.js';

interface KeyPattern {
  readonly source: string;
  /** As ajv tests a name (ECMAScript, the u flag). */
  readonly test: RegExp;
  readonly language: RegexNode;
}

function keyPattern(source: string, keyword: string, path: string): KeyPattern {
  try {
    return { source, test: new RegExp(source, 'u'), language: patternLanguage(source) };
  } catch (error) {
    if (error instanceof PatternUnsupported || error instanceof SyntaxError) throw new SchemaUnsupported(keyword, path, error.message);
    throw error;
  }
}

/** What propertyNames allows: names matching a pattern, or a list of names. */
type NameRule = { readonly pattern: KeyPattern } | { readonly list: readonly string[] };

export class PropertyKeys {
  private constructor(
    private readonly patterns: readonly (KeyPattern & { readonly schema: Json })[],
    private readonly names: NameRule | null,
    private readonly path: string,
  ) {}

  /** The keywords of an object schema; `additionalIsFalse`: no key beyond the named and pattern ones. */
  static of(t: Translation, node: SchemaObject, path: string, additionalIsFalse: boolean): PropertyKeys {
    const patterns: (KeyPattern & { schema: Json })[] = [];
    const given = node['patternProperties'];
    if (given !== undefined) {
      if (!isObject(given)) throw new SchemaUnsupported('patternProperties', pointer(path, 'patternProperties'), 'is not an object');
      for (const [source, schema] of Object.entries(given)) patterns.push({ ...keyPattern(source, 'patternProperties', pointer(path, 'patternProperties', source)), schema });
      if (patterns.length > 0 && !additionalIsFalse)
        throw new SchemaUnsupported('patternProperties', pointer(path, 'patternProperties'), 'is translated only beside additionalProperties: false (the keys no pattern matches cannot be written)');
      const first = JSON.stringify(patterns[0]?.schema);
      if (patterns.some((p) => JSON.stringify(p.schema) !== first))
        throw new SchemaUnsupported('patternProperties', pointer(path, 'patternProperties'), 'patterns with different schemas are not translated (a key both match must meet both)');
    }
    return new PropertyKeys(patterns, PropertyKeys.nameRule(t, node, path, patterns.length > 0), path);
  }

  private static nameRule(t: Translation, node: SchemaObject, path: string, withPatterns: boolean): NameRule | null {
    const where = pointer(path, 'propertyNames');
    const names = node['propertyNames'] === undefined ? true : t.deref(node['propertyNames'], where);
    if (names === true) return null;
    // Keys are strings: `type: "string"` says nothing more.
    const constraining = isObject(names) ? Object.keys(names).filter((k) => !ANNOTATIONS.has(k) && !(k === 'type' && names[k] === 'string')) : [];
    if (isObject(names) && constraining.length === 0) return null;
    if (isObject(names) && constraining.length === 1 && (Array.isArray(names['enum']) || names['const'] !== undefined)) {
      const listed = names['const'] !== undefined ? [names['const']] : (names['enum'] as Json[]);
      return { list: listed.filter((v): v is string => typeof v === 'string') };
    }
    if (!isObject(names) || constraining.length !== 1 || typeof names['pattern'] !== 'string')
      throw new SchemaUnsupported('propertyNames', where, 'is translated only as a pattern or a list of names (enum / const)');
    if (withPatterns) throw new SchemaUnsupported('propertyNames', where, 'a pattern is not translated beside patternProperties');
    return { pattern: keyPattern(names['pattern'], 'propertyNames', pointer(where, 'pattern')) };
  }

  /** The names propertyNames lists (enum / const), or null where it is not a list: object-schema.ts gives each one a slot, so none is written twice. */
  listedNames(): readonly string[] | null {
    return this.names !== null && 'list' in this.names ? this.names.list : null;
  }

  /** Whether propertyNames lets a property of this name appear. */
  allows(name: string): boolean {
    if (this.names === null) return true;
    return 'list' in this.names ? this.names.list.includes(name) : this.names.pattern.test.test(name);
  }

  /** The schemas of the patterns a name matches: its value must meet each of them too. */
  patternSchemas(name: string): Json[] {
    return this.patterns.filter((p) => p.test.test(name)).map((p) => p.schema);
  }

  /**
   * The member rule (key, ": ", value) for the properties besides `named`, or null for none;
   * undefined when these keywords say nothing about them (the caller's additionalProperties rule
   * stands). `extraBody`: additionalProperties' value (null: false).
   */
  otherMember(t: Translation, named: readonly string[], extraBody: string | null): string | null | undefined {
    if (this.names !== null && 'list' in this.names) {
      // A finite list of names: each one left over is its own member, its value as the patterns or additionalProperties say.
      const members: string[] = [];
      for (const name of this.names.list.filter((n) => !named.includes(n))) {
        const schemas = this.patternSchemas(name);
        const body = schemas.includes(false) ? null : schemas.length === 0 ? extraBody : t.schemaBeneath({ allOf: schemas }, pointer(this.path, 'patternProperties'), { otherKey: true });
        if (body !== null) members.push(`${ebnfLiteral(JSON.stringify(name))} ": " ${body}`);
      }
      return members.length === 0 ? null : t.rules.share('listed_member', members.join(' | '));
    }
    let keys: string | null;
    let body: string | null;
    if (this.patterns.length > 0) {
      const language: RegexNode = this.patterns.length === 1 ? this.patterns[0]!.language : { t: 'alt', options: this.patterns.map((p) => p.language) };
      keys = this.keysExcept(t, language, named, 'patternProperties');
      body = t.schemaBeneath(this.patterns[0]!.schema, pointer(this.path, 'patternProperties'), { otherKey: true });
    } else if (this.names !== null && extraBody !== null) {
      keys = this.keysExcept(t, this.names.pattern.language, named, 'propertyNames');
      body = extraBody;
    } else return this.names === null ? undefined : null;
    return keys === null || body === null ? null : t.rules.share('pattern_member', `${keys} ": " ${body}`);
  }

  private keysExcept(t: Translation, language: RegexNode, named: readonly string[], keyword: string): string | null {
    try {
      return hasLookahead(language) ? keysOfAutomaton(t, language, named, keyword, pointer(this.path, keyword)) : keysExcept(t.rules, language, named);
    } catch (error) {
      if (error instanceof PatternUnsupported) throw new SchemaUnsupported(keyword, pointer(this.path, keyword), error.message);
      throw error;
    }
  }
}

/**
 * A key (with its quotes) in a language holding a lookahead (`^(?!aliases|date|…).*$`), but none
 * of the names: the automaton of the language less the names, which is the only way such a
 * language is written.
 */
function keysOfAutomaton(t: Translation, language: RegexNode, names: readonly string[], keyword: string, path: string): string | null {
  const literal = (name: string): RegexNode => ({ t: 'seq', items: [...name].map((ch): RegexNode => ({ t: 'chars', set: [[ch.codePointAt(0)!, ch.codePointAt(0)!]] })) });
  const keys: RegexNode = names.length === 0 ? language : { t: 'and', nodes: [language, { t: 'not', node: { t: 'alt', options: names.map(literal) } }] };
  const states = intersection([keys], MAX_INTERSECTION_STATES);
  if (states === null) throw new SchemaUnsupported(keyword, path, `its keys' lookahead needs more than ${MAX_INTERSECTION_STATES} grammar rules`);
  return automatonString(t, states, path);
}

/** A key (with its quotes) in the language but none of the names: a trie of the names, the language's derivative at each step. */
function keysExcept(rules: GrammarRules, language: RegexNode, names: readonly string[]): string | null {
  type TrieNode = { end: boolean; children: Map<number, TrieNode> };
  const trie: TrieNode = { end: false, children: new Map() };
  for (const name of names) {
    let at = trie;
    for (const ch of name) {
      const code = ch.codePointAt(0)!;
      let next = at.children.get(code);
      if (!next) at.children.set(code, (next = { end: false, children: new Map() }));
      at = next;
    }
    at.end = true;
  }
  const walk = (node: TrieNode, rest: RegexNode): string | null => {
    const parts: string[] = [];
    if (!node.end && nullable(rest)) parts.push('"\\""');
    for (const [code, child] of node.children) {
      const after = derivative(rest, code);
      if (matchesNothing(after)) continue;
      const tail = walk(child, after);
      if (tail !== null) parts.push(`${jsonCharSet([[code, code]])} ${tail}`);
    }
    const others = startingOutside(
      rest,
      [...node.children.keys()].map((code) => [code, code] as const),
    );
    const othersText = matchesNothing(others) ? null : closedStringEbnf(rules, others);
    // A rule of its own, shared by the steps leaving alike (as object-schema.ts's extra keys).
    if (othersText !== null) parts.push(rules.share('pattern_key_rest', othersText));
    return parts.length === 0 ? null : rules.share('pattern_key', parts.join(' | '));
  };
  const body = walk(trie, language);
  return body === null ? null : `"\\"" ${body}`;
}
