// The main-thread check of a JSON Schema a request constrains its output with, before the
// request is admitted: bounded size and nesting, only local `$ref`s that resolve, no `$ref`
// cycle that consumes no input (a schema defined as itself), and a schema ajv compiles. What
// passes is returned as canonical text (keys sorted, but a `properties` map's names in their order) so equal schemas share one
// grammar compile in the engine. Checks are cheap next to a generation; repeated schemas hit a
// small cache of verdicts keyed by that text.

import { Ajv, type AnySchema } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { PROPERTY_ORDER_KEYWORD, PROPERTY_ORDERS } from '../contracts/generate.js';
import { canonicalSchemaJson } from './canonical-json.js';
import { isObject } from './json-object.js';

/** Longest canonical schema text accepted, in UTF-16 code units (≈ bytes for schema text). */
export const MAX_SCHEMA_CHARS = 64 * 1024;
/** Deepest nesting of objects and arrays inside a schema. */
export const MAX_SCHEMA_DEPTH = 32;
const VERDICT_CACHE_SIZE = 256;

/** A rejection: the message, and the path below the schema's own name it is about (if any). */
export class SchemaRejection extends Error {
  constructor(
    message: string,
    readonly path: readonly (string | number)[] = [],
  ) {
    super(message);
  }
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** The schema as canonical JSON text, or a SchemaRejection saying what is wrong. */
export function checkJsonSchema(value: unknown): string {
  const parsed = typeof value === 'string' ? parseText(value) : value;
  if (typeof parsed !== 'boolean' && !isObject<Json>(parsed)) throw new SchemaRejection('must be a JSON Schema (an object or a boolean)');
  checkDepth(parsed, 0);
  if (typeof parsed !== 'boolean') checkPropertyOrder(parsed);
  const text = canonicalSchemaJson(parsed);
  if (text.length > MAX_SCHEMA_CHARS) throw new SchemaRejection(`is ${text.length} characters as JSON; at most ${MAX_SCHEMA_CHARS} are allowed`);
  const cached = verdicts.get(text);
  if (cached !== undefined) {
    if (cached !== null) throw cached;
    return text;
  }
  try {
    if (typeof parsed !== 'boolean') {
      checkRefs(parsed);
      compiles(parsed);
    }
    remember(text, null);
    return text;
  } catch (error) {
    const rejection = error instanceof SchemaRejection ? error : new SchemaRejection(`is not a valid JSON Schema: ${(error as Error).message}`);
    remember(text, rejection);
    throw rejection;
  }
}

function parseText(text: string): unknown {
  if (text.length > MAX_SCHEMA_CHARS * 2) throw new SchemaRejection(`is ${text.length} characters; at most ${MAX_SCHEMA_CHARS} are allowed`);
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new SchemaRejection(`is not valid JSON: ${(error as Error).message}`);
  }
}

/** The schema's choice of key order, where it makes one, is one the grammar engine knows. */
function checkPropertyOrder(schema: { [key: string]: Json }): void {
  const order = schema[PROPERTY_ORDER_KEYWORD];
  if (order !== undefined && !(PROPERTY_ORDERS as readonly Json[]).includes(order))
    throw new SchemaRejection(`has "${PROPERTY_ORDER_KEYWORD}": ${JSON.stringify(order)}; it must be "schema" or "any"`);
}

function checkDepth(value: unknown, depth: number): void {
  if (typeof value !== 'object' || value === null) return;
  if (depth >= MAX_SCHEMA_DEPTH) throw new SchemaRejection(`nests deeper than ${MAX_SCHEMA_DEPTH} levels`);
  for (const child of Object.values(value)) checkDepth(child, depth + 1);
}

// Keywords whose subschemas apply at the same place in the instance: a `$ref` reached through
// only these consumes nothing, so a cycle of them never terminates.
const IN_PLACE_LISTS = ['allOf', 'anyOf', 'oneOf'];
const IN_PLACE_ONE = ['not', 'if', 'then', 'else'];

/** Every `$ref` must be a local JSON pointer ('#' or '#/…') that resolves; an in-place cycle is refused. */
function checkRefs(root: { [key: string]: Json }): void {
  const visiting = new Set<Json>();
  const done = new Set<Json>();
  const walk = (node: Json, path: string): void => {
    if (!isObject<Json>(node)) return;
    const ref = node['$ref'];
    if (ref !== undefined) {
      const target = resolve(root, ref, path);
      if (visiting.has(target)) throw new SchemaRejection(`has a $ref cycle through ${JSON.stringify(ref)} that never consumes input`);
      if (!done.has(target)) inPlace(target, ref as string);
    }
    for (const key of IN_PLACE_LISTS) {
      const list = node[key];
      if (Array.isArray(list)) list.forEach((child, i) => inPlace(child, `${path}/${key}/${i}`));
    }
    for (const key of IN_PLACE_ONE) if (node[key] !== undefined) inPlace(node[key]!, `${path}/${key}`);
  };
  const inPlace = (node: Json, path: string): void => {
    if (visiting.has(node)) throw new SchemaRejection(`has a $ref cycle at ${path} that never consumes input`);
    visiting.add(node);
    walk(node, path);
    visiting.delete(node);
    done.add(node);
  };
  // Every subschema is a start: a cycle inside `properties` or `$defs` is found from there too.
  const everywhere = (node: Json, path: string): void => {
    if (typeof node !== 'object' || node === null) return;
    if (isObject<Json>(node) && !done.has(node)) inPlace(node, path);
    for (const [key, child] of Object.entries(node)) everywhere(child, `${path}/${key}`);
  };
  everywhere(root, '#');
}

function resolve(root: Json, ref: Json, at: string): Json {
  if (typeof ref !== 'string') throw new SchemaRejection(`has a $ref at ${at} that is not a string`);
  if (ref !== '#' && !ref.startsWith('#/')) throw new SchemaRejection(`has a $ref ${JSON.stringify(ref)}: only local references ('#' or '#/…') are supported`);
  let node: Json | undefined = root;
  for (const raw of ref === '#' ? [] : ref.slice(2).split('/')) {
    const key = decodeURIComponent(raw).replaceAll('~1', '/').replaceAll('~0', '~');
    node = Array.isArray(node) ? node[Number(key)] : isObject<Json>(node) && Object.hasOwn(node, key) ? node[key] : undefined;
    if (node === undefined) throw new SchemaRejection(`has a $ref ${JSON.stringify(ref)} that does not resolve`);
  }
  return node;
}

// Unknown keywords and formats are allowed (strict off, formats not validated): the check is that
// the schema is well formed, and the grammar compiler decides what it can constrain.
const OPTIONS = { strict: false, validateFormats: false, allErrors: false } as const;
const draft07 = new Ajv(OPTIONS);
const draft2020 = new Ajv2020(OPTIONS);

function compiles(schema: { [key: string]: Json }): void {
  const dialect = typeof schema['$schema'] === 'string' ? schema['$schema'] : '';
  const ajv = /draft-0[4-7]/.test(dialect) ? draft07 : draft2020;
  // $schema picked the dialect; $id would register the schema globally in ajv, so both stay out.
  const { $schema: _dialect, $id: _id, ...body } = schema;
  const copy = body as AnySchema;
  try {
    ajv.compile(copy);
  } finally {
    ajv.removeSchema(copy);
  }
}

const verdicts = new Map<string, SchemaRejection | null>();

function remember(text: string, verdict: SchemaRejection | null): void {
  if (verdicts.size >= VERDICT_CACHE_SIZE) verdicts.delete(verdicts.keys().next().value!);
  verdicts.set(text, verdict);
}
