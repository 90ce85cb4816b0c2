// A JSON Schema as an EBNF grammar for xgrammar to match tokens against: this server's own
// translation, so that what the schema says is what the grammar enforces. Every JSON document
// the grammar allows is valid under the schema (the property tests hold it to ajv); a keyword
// whose meaning the grammar cannot state exactly is refused with SchemaUnsupported naming it
// and the path to it, never dropped. Unknown keywords are ignored, as validators ignore them.
//
// Layout: one line, ", " between members and ": " after keys (what the engine has always
// produced). Objects list the named properties in the schema's order, each optional one
// skippable, then any further properties the schema allows. Strings hold no raw control
// character: the only escapes are JSON's. Pure.

import { ebnfLiteral } from './grammar-spec.js';
import { type Bound, boundedInteger, boundedNumber, boundOf } from './number-grammar.js';
import { JSON_ESCAPE, JSON_PLAIN_CHAR, PatternUnsupported, patternLanguage, type RegexNode, regexEbnf, withLength } from './regex-grammar.js';
import { STRING_FORMATS } from './string-formats.js';

/** A schema feature the grammar cannot enforce exactly: the keyword, where it is (a JSON pointer) and why. */
export class SchemaUnsupported extends Error {
  constructor(
    readonly keyword: string,
    readonly path: string,
    readonly reason: string,
  ) {
    super(`${keyword} at ${path} cannot be enforced: ${reason}`);
  }
}

export interface SchemaGrammarOptions {
  /**
   * Objects whose schema does not say `additionalProperties`: 'forbid' generates only the named
   * properties (what OpenAI's strict mode requires the schema to say, and what the engine
   * generated before), 'allow' admits other keys as JSON Schema does (the bench's reading).
   */
  readonly absentAdditionalProperties: 'forbid' | 'allow';
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type SchemaObject = { readonly [key: string]: Json };

const isObject = (value: unknown): value is SchemaObject => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Keywords that only describe: a schema made of these (and unknown ones) allows any value. */
const ANNOTATIONS = new Set([
  '$schema',
  '$id',
  'id',
  '$comment',
  '$anchor',
  '$defs',
  'definitions',
  'title',
  'description',
  'default',
  'examples',
  'example',
  'readOnly',
  'writeOnly',
  'deprecated',
  'contentEncoding',
  'contentMediaType',
  'contentSchema',
  'nullable',
  'discriminator',
  'xml',
  'externalDocs',
  '$vocabulary',
  '$dynamicAnchor',
  'markdownDescription',
  'errorMessage',
]);
/** Keywords refused wherever they appear (no exact grammar for them). */
const REFUSED: Readonly<Record<string, string>> = {
  not: 'a grammar cannot exclude what a subschema matches',
  if: 'conditional subschemas (if / then / else) are not translated',
  dependentSchemas: 'schemas that depend on a property being present are not translated',
  dependencies: 'schemas that depend on a property being present are not translated',
  dependentRequired: 'properties required by the presence of others are not translated',
  patternProperties: 'property names matched by pattern are not translated',
  propertyNames: 'constraints on property names are not translated',
  contains: 'arrays that must contain a matching item are not translated',
  unevaluatedItems: 'unevaluated items are not translated',
  $dynamicRef: 'dynamic references are not translated',
  $recursiveRef: 'recursive references are not translated',
};

const OBJECT_KEYWORDS = ['properties', 'required', 'additionalProperties', 'minProperties', 'maxProperties', 'unevaluatedProperties'];
const ARRAY_KEYWORDS = ['items', 'prefixItems', 'additionalItems', 'minItems', 'maxItems', 'uniqueItems'];
const STRING_KEYWORDS = ['minLength', 'maxLength', 'pattern', 'format'];
const NUMBER_KEYWORDS = ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf'];
/** Keywords that constrain a value besides enum / const / type (the rest are annotations or unknown). */
const CONSTRAINING = new Set([...OBJECT_KEYWORDS, ...ARRAY_KEYWORDS, ...STRING_KEYWORDS, ...NUMBER_KEYWORDS, 'anyOf', 'oneOf', 'allOf', '$ref', ...Object.keys(REFUSED)]);
const TYPES = ['null', 'boolean', 'object', 'array', 'number', 'integer', 'string'] as const;
type TypeName = (typeof TYPES)[number];

/** A JSON value as the grammar's layout writes it (", " and ": "), as JSON.stringify escapes strings. */
export function layoutJson(value: Json): string {
  if (Array.isArray(value)) return `[${value.map(layoutJson).join(', ')}]`;
  if (isObject(value))
    return `{${Object.entries(value)
      .map(([k, v]) => `${JSON.stringify(k)}: ${layoutJson(v)}`)
      .join(', ')}}`;
  return JSON.stringify(value);
}

const pointer = (path: string, ...parts: (string | number)[]): string => [path, ...parts.map((p) => String(p).replaceAll('~', '~0').replaceAll('/', '~1'))].join('/');

/** The grammar's rules: named once each, helper rules shared by their text. */
class Rules {
  private readonly bodies = new Map<string, string>();
  private readonly byBody = new Map<string, string>();
  private count = 0;

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
    return [`root ::= ${root}`, ...[...this.bodies].map(([name, body]) => `${name} ::= ${body}`)].join('\n');
  }
}

class Translator {
  readonly rules = new Rules();
  private readonly refRules = new Map<string, string>();
  private stringRestName: string | null = null;
  private readonly legacy: boolean;

  constructor(
    private readonly root: Json,
    private readonly options: SchemaGrammarOptions,
  ) {
    const dialect = isObject(root) && typeof root['$schema'] === 'string' ? root['$schema'] : '';
    // Draft 4 to 7: `items` as an array is a tuple, and a $ref's siblings are ignored.
    this.legacy = /draft-0[3-7]/.test(dialect);
  }

  // ---- shared building blocks -------------------------------------------------------------

  // Strings are right-recursive rules (a character, then the rest): xgrammar computes their masks
  // in microseconds, where the same language as `char*` or `char{0,n}` took it ~200 ms a mask on a
  // 152K vocabulary.

  /** The rest of a string after its opening quote: characters, then the closing quote. */
  private stringRest(): string {
    if (this.stringRestName !== null) return this.stringRestName;
    const name = this.rules.reserve('string_rest');
    this.stringRestName = name;
    return this.rules.define(name, `"\\"" | ${JSON_PLAIN_CHAR} ${name} | "\\\\" ${JSON_ESCAPE} ${name}`);
  }

  anyString(): string {
    return this.rules.share('json_string', `"\\"" ${this.stringRest()}`);
  }

  /** A string of minLength..maxLength characters (maxLength null: no bound), one rule per count read so far. */
  boundedString(minLength: number, maxLength: number | null): string {
    const top = maxLength ?? minLength;
    const names = Array.from({ length: top + 1 }, (_, i) => this.rules.reserve(`string_len_${i}`));
    for (let i = 0; i <= top; i++) {
      const parts: string[] = [];
      if (i >= minLength) parts.push(i === top && maxLength === null ? this.stringRest() : '"\\""');
      if (i < top) parts.push(`${JSON_PLAIN_CHAR} ${names[i + 1]}`, `"\\\\" ${JSON_ESCAPE} ${names[i + 1]}`);
      this.rules.define(names[i]!, parts.join(' | '));
    }
    return `("\\"" ${names[0]})`;
  }

  anyNumber(): string {
    return this.rules.share('json_number', '"-"? ("0" | [1-9] [0-9]*) ("." [0-9]+)? ([eE] [+-]? [0-9]+)?');
  }

  anyInteger(): string {
    return this.rules.share('json_integer', '"-"? ("0" | [1-9] [0-9]*)');
  }

  anyValue(): string {
    const known = this.refRules.get('\u0000any');
    if (known) return known;
    const value = this.rules.reserve('json_value');
    this.refRules.set('\u0000any', value);
    const object = this.rules.share('json_object', `"{" "}" | "{" ${this.anyString()} ": " ${value} (", " ${this.anyString()} ": " ${value})* "}"`);
    const array = this.rules.share('json_array', `"[" "]" | "[" ${value} (", " ${value})* "]"`);
    this.rules.define(value, `${object} | ${array} | ${this.anyString()} | ${this.anyNumber()} | "true" | "false" | "null"`);
    return value;
  }

  // ---- references -------------------------------------------------------------------------

  resolve(ref: string, path: string): Json {
    if (ref !== '#' && !ref.startsWith('#/')) throw new SchemaUnsupported('$ref', path, `only local references are supported, got ${JSON.stringify(ref)}`);
    let node: Json | undefined = this.root;
    for (const raw of ref === '#' ? [] : ref.slice(2).split('/')) {
      const key = decodeURIComponent(raw).replaceAll('~1', '/').replaceAll('~0', '~');
      node = Array.isArray(node) ? node[Number(key)] : isObject(node) && Object.hasOwn(node, key) ? node[key] : undefined;
      if (node === undefined) throw new SchemaUnsupported('$ref', path, `${JSON.stringify(ref)} does not resolve`);
    }
    return node;
  }

  /** Follows $refs with nothing beside them, for the checks that look inside a subschema. */
  deref(node: Json, path: string): Json {
    for (let hops = 0; isObject(node) && typeof node['$ref'] === 'string' && hops < 32; hops++) {
      const constraining = Object.keys(node).filter((k) => k !== '$ref' && !ANNOTATIONS.has(k));
      if (constraining.length > 0 && !this.legacy) return node;
      node = this.resolve(node['$ref'], path);
    }
    return node;
  }

  private refRule(ref: string, path: string): string | null {
    const known = this.refRules.get(ref);
    if (known) return known;
    const name = this.rules.reserve(`ref_${ref.split('/').at(-1) ?? 'root'}`);
    this.refRules.set(ref, name);
    const body = this.schema(this.resolve(ref, path), ref);
    if (body === null) throw new SchemaUnsupported('$ref', path, `${JSON.stringify(ref)} allows no value`);
    this.rules.define(name, body);
    return name;
  }

  // ---- schemas ----------------------------------------------------------------------------

  /** The EBNF expression for the values the schema allows; null when it allows none. */
  schema(node: Json, path: string): string | null {
    if (node === true) return this.anyValue();
    if (node === false) return null;
    if (!isObject(node)) throw new SchemaUnsupported('schema', path, 'is neither an object nor a boolean');
    for (const keyword of Object.keys(REFUSED)) if (node[keyword] !== undefined) throw new SchemaUnsupported(keyword, pointer(path, keyword), REFUSED[keyword]!);
    if (typeof node['$ref'] === 'string') {
      const siblings = Object.keys(node).filter((k) => k !== '$ref' && !ANNOTATIONS.has(k));
      if (this.legacy || siblings.length === 0) return this.refRule(node['$ref'], pointer(path, '$ref'));
      const { $ref, ...rest } = node;
      return this.schema({ ...rest, allOf: [...(Array.isArray(rest['allOf']) ? rest['allOf'] : []), { $ref }] }, path);
    }
    if (Array.isArray(node['allOf'])) return this.schema(this.mergeAllOf(node, path), path);
    if (Array.isArray(node['anyOf'])) return this.union(node, 'anyOf', path);
    if (Array.isArray(node['oneOf'])) return this.union(node, 'oneOf', path);
    if (node['enum'] !== undefined || node['const'] !== undefined) return this.values(node, path);
    const alternatives: string[] = [];
    for (const type of this.typesOf(node, path)) {
      const body = this.typed(node, type, path);
      if (body !== null) alternatives.push(body);
    }
    if (alternatives.length === 0) return null;
    return alternatives.length === 1 ? alternatives[0]! : `(${alternatives.join(' | ')})`;
  }

  /** The types a schema allows: its `type`, or (without one) those its keywords speak of, or all. */
  private typesOf(node: SchemaObject, path: string): TypeName[] {
    const declared = node['type'];
    if (declared !== undefined) {
      const list = Array.isArray(declared) ? declared : [declared];
      for (const t of list) if (typeof t !== 'string' || !(TYPES as readonly string[]).includes(t)) throw new SchemaUnsupported('type', pointer(path, 'type'), `unknown type ${JSON.stringify(t)}`);
      const types = list as TypeName[];
      // "number" already includes the integers.
      return types.includes('number') ? types.filter((t) => t !== 'integer') : types;
    }
    const has = (keys: readonly string[]): boolean => keys.some((k) => node[k] !== undefined);
    const inferred: TypeName[] = [];
    if (has(OBJECT_KEYWORDS)) inferred.push('object');
    if (has(ARRAY_KEYWORDS)) inferred.push('array');
    if (has(STRING_KEYWORDS)) inferred.push('string');
    if (has(NUMBER_KEYWORDS)) inferred.push('number');
    return inferred.length > 0 ? inferred : ['object', 'array', 'string', 'number', 'boolean', 'null'];
  }

  private typed(node: SchemaObject, type: TypeName, path: string): string | null {
    switch (type) {
      case 'null':
        return '"null"';
      case 'boolean':
        return '("true" | "false")';
      case 'integer':
      case 'number':
        return this.number(node, type, path);
      case 'string':
        return this.string(node, path);
      case 'array':
        return this.array(node, path);
      case 'object':
        return this.object(node, path);
    }
  }

  // ---- enum / const -----------------------------------------------------------------------

  private values(node: SchemaObject, path: string): string | null {
    const listed: Json[] = node['const'] !== undefined ? [node['const']] : Array.isArray(node['enum']) ? node['enum'] : [];
    if (node['const'] !== undefined && Array.isArray(node['enum'])) {
      const constText = layoutJson(node['const']);
      if (!node['enum'].some((v) => layoutJson(v) === constText)) return null;
    }
    // Unknown keywords beside them (vendor extensions such as "readonly" or "weight") are ignored, as validators ignore them.
    const other = Object.keys(node).filter((k) => CONSTRAINING.has(k));
    if (other.length > 0) throw new SchemaUnsupported(other[0]!, pointer(path, other[0]!), 'is not translated beside enum / const');
    const types = node['type'] === undefined ? null : this.typesOf(node, path);
    const kept = listed.filter((value) => types === null || types.some((t) => hasType(value, t)));
    if (kept.length === 0) return null;
    const texts = [...new Set(kept.map(layoutJson))];
    return texts.length === 1 ? ebnfLiteral(texts[0]!) : `(${texts.map(ebnfLiteral).join(' | ')})`;
  }

  // ---- combinations -----------------------------------------------------------------------

  private union(node: SchemaObject, keyword: 'anyOf' | 'oneOf', path: string): string | null {
    const { [keyword]: branches, ...siblings } = node;
    const list = branches as Json[];
    const constraining = Object.keys(siblings).filter((k) => !ANNOTATIONS.has(k));
    const resolved = list.map((branch, i) => (constraining.length > 0 ? this.mergeAllOf({ allOf: [siblings, branch] }, pointer(path, keyword, i)) : branch));
    if (keyword === 'oneOf') {
      for (let i = 0; i < resolved.length; i++)
        for (let j = i + 1; j < resolved.length; j++)
          if (!this.disjoint(resolved[i]!, resolved[j]!, path))
            throw new SchemaUnsupported(
              'oneOf',
              pointer(path, 'oneOf'),
              `subschemas ${i} and ${j} may both match one value (only oneOf over subschemas of different types or constants is translated)`,
            );
    }
    const parts = resolved.map((branch, i) => this.schema(branch, pointer(path, keyword, i))).filter((p): p is string => p !== null);
    if (parts.length === 0) return null;
    return parts.length === 1 ? parts[0]! : `(${parts.join(' | ')})`;
  }

  /** Whether no value can match both subschemas: different types, different constants, or objects with a required property of different constants. */
  private disjoint(a: Json, b: Json, path: string): boolean {
    const x = this.deref(a, path);
    const y = this.deref(b, path);
    if (!isObject(x) || !isObject(y)) return false;
    const tx = this.kinds(x, path);
    const ty = this.kinds(y, path);
    if (tx && ty && ![...tx].some((t) => ty.has(t))) return true;
    const vx = constants(x);
    const vy = constants(y);
    if (vx && vy && ![...vx].some((v) => vy.has(v))) return true;
    const px = isObject(x['properties']) ? x['properties'] : {};
    const py = isObject(y['properties']) ? y['properties'] : {};
    const rx = Array.isArray(x['required']) ? x['required'] : [];
    const ry = Array.isArray(y['required']) ? y['required'] : [];
    for (const key of Object.keys(px)) {
      if (!rx.includes(key) || !ry.includes(key) || py[key] === undefined) continue;
      const cx = constants(this.deref(px[key]!, path));
      const cy = constants(this.deref(py[key]!, path));
      if (cx && cy && ![...cx].some((v) => cy.has(v))) return true;
    }
    return false;
  }

  private kinds(node: SchemaObject, path: string): Set<string> | null {
    const values = constants(node);
    if (values) return new Set([...values].map((v) => kindOf(JSON.parse(v) as Json)));
    if (node['type'] === undefined) return null;
    return new Set(this.typesOf(node, path).map((t) => (t === 'integer' ? 'number' : t)));
  }

  /** allOf folded into one schema where its members speak of different things; refused where they overlap in a way a merge could loosen. */
  private mergeAllOf(node: SchemaObject, path: string): SchemaObject {
    const { allOf, ...base } = node;
    let merged: { [key: string]: Json } = { ...base };
    const members = [base, ...(allOf as Json[]).map((m, i) => this.deref(m, pointer(path, 'allOf', i)))];
    for (const [i, member] of members.entries()) {
      if (i === 0) continue;
      if (member === true) continue;
      if (!isObject(member)) throw new SchemaUnsupported('allOf', pointer(path, 'allOf', i - 1), 'a subschema allows no value');
      let flat: SchemaObject = member;
      if (Array.isArray(member['allOf'])) flat = this.mergeAllOf(member, pointer(path, 'allOf', i - 1));
      merged = mergeTwo(merged, flat, pointer(path, 'allOf', i - 1));
    }
    // A member's own additionalProperties applies to its own properties only: merging must not let another member's property through it.
    const allNames = isObject(merged['properties']) ? Object.keys(merged['properties']) : [];
    for (const member of members) {
      if (!isObject(member) || member['additionalProperties'] === undefined || member['additionalProperties'] === true) continue;
      const own = isObject(member['properties']) ? Object.keys(member['properties']) : [];
      const foreign = allNames.find((n) => !own.includes(n));
      if (foreign !== undefined) throw new SchemaUnsupported('allOf', pointer(path, 'allOf'), `a subschema's additionalProperties would refuse property ${JSON.stringify(foreign)} another one names`);
    }
    return merged;
  }

  // ---- numbers ----------------------------------------------------------------------------

  private number(node: SchemaObject, type: 'integer' | 'number', path: string): string | null {
    const bound = (key: string, exclusive: boolean): Bound | null => {
      const value = node[key];
      if (value === undefined || typeof value === 'boolean') return null;
      if (typeof value !== 'number') throw new SchemaUnsupported(key, pointer(path, key), 'is not a number');
      return boundOf(value, exclusive);
    };
    // Draft 4's boolean exclusiveMinimum / exclusiveMaximum make minimum / maximum exclusive.
    const lowers = [bound('minimum', node['exclusiveMinimum'] === true), bound('exclusiveMinimum', true)].filter((b): b is Bound => b !== null);
    const uppers = [bound('maximum', node['exclusiveMaximum'] === true), bound('exclusiveMaximum', true)].filter((b): b is Bound => b !== null);
    const lower = tightest(lowers, 'lower');
    const upper = tightest(uppers, 'upper');
    const multipleOf = node['multipleOf'];
    if (multipleOf !== undefined) {
      if (typeof multipleOf !== 'number' || !Number.isInteger(multipleOf) || multipleOf <= 0)
        throw new SchemaUnsupported('multipleOf', pointer(path, 'multipleOf'), 'only positive whole multiples are translated');
      if (multipleOf === 1) return boundedInteger(lower, upper) ?? null;
      if (lower !== null || upper !== null) throw new SchemaUnsupported('multipleOf', pointer(path, 'multipleOf'), 'is not translated together with minimum / maximum');
      if (multipleOf > 1000) throw new SchemaUnsupported('multipleOf', pointer(path, 'multipleOf'), 'is over 1000');
      const multiple = this.multiples(multipleOf);
      return type === 'number' ? `(${multiple} ("." "0"+)?)` : multiple;
    }
    if (lower === null && upper === null) return type === 'integer' ? this.anyInteger() : this.anyNumber();
    const body = type === 'integer' ? boundedInteger(lower, upper) : boundedNumber(lower, upper);
    return body === null ? null : this.rules.share(`${type}_range`, body);
  }

  /** Integers that are multiples of k: a remainder automaton over the digits, one rule per remainder. */
  private multiples(k: number): string {
    const names = Array.from({ length: k }, (_, r) => this.rules.reserve(`mod${k}_${r}`));
    for (let r = 0; r < k; r++) {
      const byNext = new Map<number, number[]>();
      for (let d = 0; d <= 9; d++) {
        const next = (r * 10 + d) % k;
        byNext.set(next, [...(byNext.get(next) ?? []), d]);
      }
      const parts = [...byNext].map(([next, digits]) => `[${digits.join('')}] ${names[next]}`);
      if (r === 0) parts.unshift('""');
      this.rules.define(names[r]!, parts.join(' | '));
    }
    const first = new Map<number, number[]>();
    for (let d = 1; d <= 9; d++) first.set(d % k, [...(first.get(d % k) ?? []), d]);
    const positive = [...first].map(([next, digits]) => `[${digits.join('')}] ${names[next]}`).join(' | ');
    return this.rules.share(`multiple_of_${k}`, `"0" | "-"? (${positive})`);
  }

  // ---- strings ----------------------------------------------------------------------------

  private string(node: SchemaObject, path: string): string | null {
    const minLength = typeof node['minLength'] === 'number' ? node['minLength'] : 0;
    const maxLength = typeof node['maxLength'] === 'number' ? node['maxLength'] : null;
    let language: RegexNode | null = null;
    const format = node['format'];
    if (typeof format === 'string') {
      const pattern = STRING_FORMATS[format];
      if (pattern === undefined)
        throw new SchemaUnsupported('format', pointer(path, 'format'), `format ${JSON.stringify(format)} is not enforced (enforced: ${Object.keys(STRING_FORMATS).join(', ')})`);
      if (node['pattern'] !== undefined) throw new SchemaUnsupported('format', pointer(path, 'format'), 'is not translated together with pattern');
      language = patternLanguage(pattern);
    }
    if (typeof node['pattern'] === 'string') {
      try {
        language = patternLanguage(node['pattern']);
      } catch (error) {
        if (error instanceof PatternUnsupported) throw new SchemaUnsupported('pattern', pointer(path, 'pattern'), error.message);
        throw error;
      }
    }
    if (language === null) {
      if (minLength === 0 && maxLength === null) return this.anyString();
      if (maxLength !== null && maxLength < minLength) return null;
      return this.boundedString(minLength, maxLength);
    }
    if (minLength > 0 || maxLength !== null) {
      const bounded = withLength(language, minLength, maxLength);
      if (bounded === null)
        throw new SchemaUnsupported(
          maxLength !== null ? 'maxLength' : 'minLength',
          path,
          `is not translated together with ${format !== undefined ? 'this format' : 'this pattern'} (state the length in the pattern)`,
        );
      language = bounded;
    }
    const body = regexEbnf(language);
    return body === null ? null : this.rules.share('string_pattern', `"\\"" ${body} "\\""`);
  }

  // ---- arrays -----------------------------------------------------------------------------

  private array(node: SchemaObject, path: string): string | null {
    const minItems = typeof node['minItems'] === 'number' ? node['minItems'] : 0;
    const maxItems = typeof node['maxItems'] === 'number' ? node['maxItems'] : null;
    if (node['uniqueItems'] === true && (maxItems === null || maxItems > 1)) throw new SchemaUnsupported('uniqueItems', pointer(path, 'uniqueItems'), 'a grammar cannot compare items with each other');
    let prefix: Json[] = [];
    let tail: Json = true;
    let tailPath = pointer(path, 'items');
    if (Array.isArray(node['prefixItems'])) {
      prefix = node['prefixItems'];
      tail = node['items'] ?? true;
    } else if (Array.isArray(node['items'])) {
      prefix = node['items'];
      tail = node['additionalItems'] ?? true;
      tailPath = pointer(path, 'additionalItems');
    } else tail = node['items'] ?? true;
    const prefixBodies: string[] = [];
    for (const [i, item] of prefix.entries()) {
      const body = this.schema(item, pointer(path, Array.isArray(node['prefixItems']) ? 'prefixItems' : 'items', i));
      if (body === null) break;
      prefixBodies.push(body);
    }
    // A prefix item allowing no value caps the array before it.
    const cap = prefixBodies.length < prefix.length ? prefixBodies.length : null;
    const tailBody = cap !== null ? null : this.schema(tail, tailPath);
    const max = [maxItems, cap, tailBody === null ? prefixBodies.length : null].filter((m): m is number => m !== null).reduce((a, b) => Math.min(a, b), Number.POSITIVE_INFINITY);
    if (minItems > max) return null;
    const options: string[] = [];
    for (let count = minItems; count <= Math.min(prefixBodies.length, max); count++) options.push(count === 0 ? '"[" "]"' : `"[" ${prefixBodies.slice(0, count).join(' ", " ')} "]"`);
    if (tailBody !== null && max > prefixBodies.length) {
      const fewest = Math.max(1, minItems - prefixBodies.length);
      const most = Number.isFinite(max) ? max - prefixBodies.length : null;
      const head = prefixBodies.length > 0 ? `${prefixBodies.join(' ", " ')} ", " ` : '';
      const more = most === null ? (fewest === 1 ? '*' : `{${fewest - 1},}`) : most === 1 ? null : `{${fewest - 1},${most - 1}}`;
      options.push(`"[" ${head}${tailBody}${more === null ? '' : ` (", " ${tailBody})${more}`} "]"`);
    }
    if (options.length === 0) return null;
    return this.rules.share('array', options.join(' | '));
  }

  // ---- objects ----------------------------------------------------------------------------

  private object(node: SchemaObject, path: string): string | null {
    const properties = isObject(node['properties']) ? node['properties'] : {};
    const required = new Set(Array.isArray(node['required']) ? node['required'].filter((r): r is string => typeof r === 'string') : []);
    let additional: Json | undefined = node['additionalProperties'];
    if (additional === undefined && node['unevaluatedProperties'] === false) additional = false;
    else if (node['unevaluatedProperties'] !== undefined && node['unevaluatedProperties'] !== true && additional === undefined)
      throw new SchemaUnsupported('unevaluatedProperties', pointer(path, 'unevaluatedProperties'), 'is translated only as false');
    const extraSchema: Json = additional === undefined ? this.options.absentAdditionalProperties === 'allow' : additional;
    const extraBody = this.schema(extraSchema, pointer(path, 'additionalProperties'));
    // Named properties, then required names only additionalProperties covers (they must appear).
    const named: { name: string; body: string; required: boolean }[] = [];
    for (const [name, schema] of Object.entries(properties)) {
      const body = this.schema(schema, pointer(path, 'properties', name));
      if (body === null) {
        if (required.has(name)) return null;
        continue;
      }
      named.push({ name, body, required: required.has(name) });
    }
    for (const name of required) {
      if (Object.hasOwn(properties, name)) continue;
      if (extraBody === null) return null;
      named.push({ name, body: extraBody, required: true });
    }
    const requiredCount = named.filter((p) => p.required).length;
    const minProperties = typeof node['minProperties'] === 'number' ? node['minProperties'] : 0;
    const maxProperties = typeof node['maxProperties'] === 'number' ? node['maxProperties'] : null;
    if (minProperties > requiredCount) throw new SchemaUnsupported('minProperties', pointer(path, 'minProperties'), 'is translated only when the required properties already meet it');
    if (maxProperties !== null && (extraBody !== null || named.length > maxProperties)) {
      if (maxProperties < requiredCount) return null;
      throw new SchemaUnsupported('maxProperties', pointer(path, 'maxProperties'), 'is translated only when the schema cannot have more properties anyway');
    }
    const extra = extraBody === null ? null : this.rules.share('extra_member', `${this.extraKey(named.map((p) => p.name))} ": " ${extraBody}`);
    // members(i, first): the members from the i-th named property on; first: no comma before the next one.
    const memo = new Map<string, string>();
    const members = (i: number, first: boolean): string => {
      const key = `${i}:${first}`;
      const known = memo.get(key);
      if (known !== undefined) return known;
      let body: string;
      if (i === named.length) {
        body = extra === null ? '""' : first ? `(${extra} (", " ${extra})*)?` : `(", " ${extra})*`;
      } else {
        const p = named[i]!;
        const present = `${first ? '' : '", " '}${ebnfLiteral(JSON.stringify(p.name))} ": " ${p.body} ${members(i + 1, false)}`;
        body = p.required ? present : `${present} | ${members(i + 1, first)}`;
      }
      const name = body === '""' ? '""' : this.rules.share('members', body);
      memo.set(key, name);
      return name;
    };
    const inner = members(0, true);
    return this.rules.share('object', inner === '""' ? '"{" "}"' : `"{" ${inner} "}"`);
  }

  /** A key other than the named ones: a trie of the names, leaving it at any step (keys without escapes). */
  private extraKey(names: readonly string[]): string {
    type Node = { end: boolean; children: Map<number, Node> };
    const trie: Node = { end: false, children: new Map() };
    for (const name of names) {
      let at = trie;
      for (const ch of name) {
        const code = ch.codePointAt(0)!;
        if (code < 0x20 || code === 0x22 || code === 0x5c) break;
        let next = at.children.get(code);
        if (!next) at.children.set(code, (next = { end: false, children: new Map() }));
        at = next;
      }
      at.end = true;
    }
    const plain = `[^"\\\\\\u0000-\\u001F]`;
    const rest = `${plain}*`;
    const walk = (node: Node): string => {
      const parts: string[] = [];
      if (!node.end) parts.push('""');
      const excluded = [...node.children.keys()].sort((a, b) => a - b);
      const others = `[^"\\\\\\u0000-\\u001F${excluded.map((c) => (c <= 0xffff ? `\\u${c.toString(16).padStart(4, '0')}` : `\\U${c.toString(16).padStart(8, '0')}`)).join('')}]`;
      parts.push(`${others} ${rest}`);
      for (const [code, child] of node.children) parts.push(`${ebnfLiteral(String.fromCodePoint(code))} ${walk(child)}`);
      return this.rules.share('extra_key_part', parts.join(' | '));
    };
    return this.rules.share('extra_key', `"\\"" ${walk(trie)} "\\""`);
  }
}

const kindOf = (value: Json): string => (value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value === 'object' ? 'object' : typeof value);

function hasType(value: Json, type: TypeName): boolean {
  if (type === 'integer') return typeof value === 'number' && Number.isInteger(value);
  return kindOf(value) === type;
}

/** The values a schema's const / enum allow (as layout text), or null when it has neither. */
function constants(node: Json): Set<string> | null {
  if (!isObject(node)) return null;
  if (node['const'] !== undefined) return new Set([layoutJson(node['const'])]);
  if (Array.isArray(node['enum'])) return new Set(node['enum'].map(layoutJson));
  return null;
}

function tightest(bounds: readonly Bound[], side: 'lower' | 'upper'): Bound | null {
  if (bounds.length === 0) return null;
  const value = (b: Bound): number => Number(`${b.negative ? '-' : ''}${b.magnitude.int}.${b.magnitude.frac || '0'}`);
  return bounds.reduce((best, b) => {
    const diff = value(b) - value(best);
    if (diff === 0) return b.exclusive ? b : best;
    return (side === 'lower' ? diff > 0 : diff < 0) ? b : best;
  });
}

const LOWER_KEYS = new Set(['minimum', 'exclusiveMinimum', 'minLength', 'minItems', 'minProperties']);
const UPPER_KEYS = new Set(['maximum', 'exclusiveMaximum', 'maxLength', 'maxItems', 'maxProperties']);

/** Two schemas that must both hold, as one, where that is exact; refused where it is not. */
function mergeTwo(a: SchemaObject, b: SchemaObject, path: string): { [key: string]: Json } {
  const out: { [key: string]: Json } = { ...a };
  for (const [key, value] of Object.entries(b)) {
    const mine = out[key];
    if (mine === undefined || ANNOTATIONS.has(key)) {
      if (mine === undefined) out[key] = value;
      continue;
    }
    if (JSON.stringify(mine) === JSON.stringify(value)) continue;
    if (key === 'properties' && isObject(mine) && isObject(value)) {
      const props: { [key: string]: Json } = { ...mine };
      for (const [name, schema] of Object.entries(value)) props[name] = props[name] === undefined ? schema : { allOf: [props[name]!, schema] };
      out[key] = props;
    } else if (key === 'required' && Array.isArray(mine) && Array.isArray(value)) out[key] = [...new Set([...mine, ...value])];
    else if (key === 'type') {
      const list = (v: Json): string[] => (Array.isArray(v) ? (v as string[]) : [v as string]);
      const both = list(mine).filter((t) => list(value).includes(t) || (t === 'integer' && list(value).includes('number')));
      for (const t of list(value)) if (t === 'integer' && list(mine).includes('number') && !both.includes('integer')) both.push('integer');
      out[key] = both.length === 1 ? both[0]! : both;
    } else if (typeof mine === 'number' && typeof value === 'number' && (LOWER_KEYS.has(key) || UPPER_KEYS.has(key))) out[key] = LOWER_KEYS.has(key) ? Math.max(mine, value) : Math.min(mine, value);
    else if (key === 'allOf' && Array.isArray(mine) && Array.isArray(value)) out[key] = [...mine, ...value];
    else throw new SchemaUnsupported('allOf', path, `its subschemas both set ${key} differently`);
  }
  return out;
}

/** The grammar (xgrammar EBNF, rooted at `root`) for the JSON documents a schema allows; SchemaUnsupported names what it cannot enforce. */
export function schemaGrammar(schema: unknown, options: SchemaGrammarOptions): string {
  const translator = new Translator(schema as Json, options);
  const root = translator.schema(schema as Json, '#');
  if (root === null) throw new SchemaUnsupported('schema', '#', 'allows no value');
  return translator.rules.text(root);
}

/** Any JSON object (response_format json_object), in the same layout. */
export function jsonObjectGrammar(): string {
  return schemaGrammar({ type: 'object' }, { absentAdditionalProperties: 'allow' });
}
