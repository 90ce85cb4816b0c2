// The vocabulary every part of the schema translation shares: the JSON values a schema is made
// of, the refusal that names what cannot be enforced, the translation's options, the keyword
// families (each keyword named once, here) and the layout the grammar writes values in. Pure.

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
  /**
   * Leave string lengths and uniqueItems over strings to the string guard where the text tells it
   * what holds (json-schema/guard-plan.ts): only for a grammar that is the whole document, which
   * the guard follows from its first byte.
   */
  readonly guardStrings?: boolean;
  /**
   * 'schema' (the default, as OpenAI's structured outputs): an object's named properties in the
   * schema's order. 'any': in any order where the guard can follow the object's keys
   * (json-schema/any-order.ts; only with guardStrings), the schema's order elsewhere.
   */
  readonly propertyOrder?: 'schema' | 'any';
}

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type SchemaObject = { readonly [key: string]: Json };

export const isObject = (value: unknown): value is SchemaObject => typeof value === 'object' && value !== null && !Array.isArray(value);

/** A JSON pointer one or more steps below `path`, each step escaped as RFC 6901 says. */
export const pointer = (path: string, ...parts: (string | number)[]): string => [path, ...parts.map((p) => String(p).replaceAll('~', '~0').replaceAll('/', '~1'))].join('/');

/** What a local reference ("#" or "#/a/b", RFC 6901 with percent-encoding) points at in `root`; undefined when nothing. */
export function resolvePointer(root: Json, ref: string): Json | undefined {
  if (ref !== '#' && !ref.startsWith('#/')) return undefined;
  let node: Json | undefined = root;
  for (const raw of ref === '#' ? [] : ref.slice(2).split('/')) {
    const key = decodeURIComponent(raw).replaceAll('~1', '/').replaceAll('~0', '~');
    node = Array.isArray(node) ? node[Number(key)] : isObject(node) && Object.hasOwn(node, key) ? node[key] : undefined;
    if (node === undefined) return undefined;
  }
  return node;
}

/** Keywords that only describe: a schema made of these (and unknown ones) allows any value. */
export const ANNOTATIONS = new Set([
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
export const REFUSED: Readonly<Record<string, string>> = {
  contains: 'arrays that must contain a matching item are not translated',
  unevaluatedItems: 'unevaluated items are not translated',
  $dynamicRef: 'dynamic references are not translated',
  $recursiveRef: 'recursive references are not translated',
};

export const OBJECT_KEYWORDS = ['properties', 'required', 'additionalProperties', 'patternProperties', 'propertyNames', 'minProperties', 'maxProperties', 'unevaluatedProperties'];
export const ARRAY_KEYWORDS = ['items', 'prefixItems', 'additionalItems', 'minItems', 'maxItems', 'uniqueItems'];
export const STRING_KEYWORDS = ['minLength', 'maxLength', 'pattern', 'format'];
export const NUMBER_KEYWORDS = ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf'];
/**
 * Keywords presence-constraints.ts translates where they speak only of which keys an object has
 * (not over `required`, dependencies as lists or `required`-only subschemas; dependentSchemas
 * that say more are split into cases); refused by name elsewhere.
 */
export const PRESENCE_KEYWORDS = ['not', 'dependencies', 'dependentRequired', 'dependentSchemas'];
/** Keywords that constrain a value besides enum / const / type (the rest are annotations or unknown). */
export const CONSTRAINING = new Set([...OBJECT_KEYWORDS, ...ARRAY_KEYWORDS, ...STRING_KEYWORDS, ...NUMBER_KEYWORDS, ...PRESENCE_KEYWORDS, 'anyOf', 'oneOf', 'allOf', '$ref', ...Object.keys(REFUSED)]);
/** Whether a validator reads the keyword (others — annotations, extensions such as "x-property-order", unknown words — change nothing). */
export const isValidated = (keyword: string): boolean => CONSTRAINING.has(keyword) || keyword === 'type' || keyword === 'enum' || keyword === 'const';
/** Keywords whose subschema applies to some of a value's parts: as `true` or `{}` every value meets them. */
const OPEN_WHEN_EMPTY = new Set(['additionalProperties', 'unevaluatedProperties', 'items', 'additionalItems', 'propertyNames']);
/**
 * Whether the keyword, with this value, narrows what is valid: validated, and not a subschema
 * every part meets (WashingtonPost's `additionalProperties: {}` beside its root anyOf, which a
 * conjunction with each branch can drop).
 */
export function constrains(keyword: string, value: Json | undefined): boolean {
  if (!isValidated(keyword)) return false;
  if (!OPEN_WHEN_EMPTY.has(keyword)) return true;
  return !(value === true || (isObject(value) && Object.keys(value).every((k) => !isValidated(k))));
}
/** Keywords whose values two allOf members combine by taking the larger (lower bounds) or the smaller (upper bounds). */
export const LOWER_BOUND_KEYWORDS = new Set(['minimum', 'exclusiveMinimum', 'minLength', 'minItems', 'minProperties']);
export const UPPER_BOUND_KEYWORDS = new Set(['maximum', 'exclusiveMaximum', 'maxLength', 'maxItems', 'maxProperties']);

export const TYPES = ['null', 'boolean', 'object', 'array', 'number', 'integer', 'string'] as const;
export type TypeName = (typeof TYPES)[number];

/** The JSON kind of a value, as `type` names it (integers are numbers here). */
export const kindOf = (value: Json): string => (value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value === 'object' ? 'object' : typeof value);

export function hasType(value: Json, type: TypeName): boolean {
  if (type === 'integer') return typeof value === 'number' && Number.isInteger(value);
  return kindOf(value) === type;
}

/** A JSON value as the grammar's layout writes it (", " and ": "), as JSON.stringify escapes strings. */
export function layoutJson(value: Json): string {
  if (Array.isArray(value)) return `[${value.map(layoutJson).join(', ')}]`;
  if (isObject(value))
    return `{${Object.entries(value)
      .map(([k, v]) => `${JSON.stringify(k)}: ${layoutJson(v)}`)
      .join(', ')}}`;
  return JSON.stringify(value);
}

/** The values a schema's const / enum allow (as layout text), or null when it has neither. */
export function constants(node: Json): Set<string> | null {
  if (!isObject(node)) return null;
  if (node['const'] !== undefined) return new Set([layoutJson(node['const'])]);
  if (Array.isArray(node['enum'])) return new Set(node['enum'].map(layoutJson));
  return null;
}
