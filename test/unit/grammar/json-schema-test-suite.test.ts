// The JSON Schema Test Suite (draft 2020-12, the files of the keywords the grammar translates and the
// formats it enforces) run
// against the schema → grammar translation. For each case whose schema translates, every invalid
// instance is refused, and every valid instance is accepted once written in the grammar's layout —
// unless the strict grammar cannot express it (a property its schema does not name where the schema
// is silent on additionalProperties: strict mode does not generate it), which is counted apart.
// A case whose schema is refused must be refused naming a keyword the schema has at the path given.
// Cases that disagree for a known reason are listed by name in KNOWN_EXCEPTIONS, never skipped silently.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { afterAll, describe, expect, it } from 'vitest';
import { strictSchema } from '../../../bench/scenarios/jsonschemabench/maskbench.js';
import { layoutJson, SchemaUnsupported, schemaGrammar } from '../../../src/grammar/schema-grammar.js';
import { loadXGrammar } from '../../../src/grammar/xgrammar-module.js';

type Json = Parameters<typeof layoutJson>[0];
interface SuiteTest {
  readonly description: string;
  readonly data: Json;
  readonly valid: boolean;
}
interface SuiteCase {
  readonly description: string;
  readonly schema: Json;
  readonly tests: readonly SuiteTest[];
}

/**
 * The suite is third-party data, never committed: it is fetched at SUITE_COMMIT into a git-ignored
 * cache (node_modules/.cache, or $JSON_SCHEMA_TEST_SUITE_DIR: a checkout of the suite's repository
 * made elsewhere). The npm package @json-schema-org/tests holds no tests, only a dependency on the
 * git repository. Where neither the cache nor GitHub is reachable the file says so and skips.
 */
const SUITE_REPOSITORY = 'https://github.com/json-schema-org/JSON-Schema-Test-Suite';
const SUITE_COMMIT = '44401e0c046704b476ec9d2e2fccdaee618f259d';
const SUITE_DIR = process.env.JSON_SCHEMA_TEST_SUITE_DIR ?? join(import.meta.dirname, '../../../node_modules/.cache/json-schema-test-suite');
const SUITE = join(SUITE_DIR, 'tests/draft2020-12');

/** The suite's draft 2020-12 folder, fetched if missing; null (with the reason printed) where it cannot be had. */
function suiteFolder(): string | null {
  if (existsSync(SUITE)) return SUITE;
  const git = (...args: string[]): void => void execFileSync('git', ['-C', SUITE_DIR, ...args], { stdio: 'ignore', timeout: 60_000, env: { ...process.env, GIT_TERMINAL_PROMPT: '0' } });
  try {
    mkdirSync(SUITE_DIR, { recursive: true });
    git('init', '-q');
    git('fetch', '-q', '--depth', '1', SUITE_REPOSITORY, SUITE_COMMIT);
    git('checkout', '-q', 'FETCH_HEAD');
    return SUITE;
  } catch (error) {
    rmSync(SUITE_DIR, { recursive: true, force: true });
    console.log(`JSON Schema Test Suite skipped: it is not in ${SUITE_DIR} and fetching ${SUITE_REPOSITORY} at ${SUITE_COMMIT} failed (${(error as Error).message.split('\n')[0]})`);
    return null;
  }
}

/** The suite's files of the keywords the grammar translates, and of the formats it enforces. */
const KEYWORDS = ['type', 'enum', 'const', 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf', 'minLength', 'maxLength', 'pattern'];
const MORE_KEYWORDS = [
  'items',
  'prefixItems',
  'minItems',
  'maxItems',
  'required',
  'properties',
  'additionalProperties',
  'patternProperties',
  'propertyNames',
  'anyOf',
  'oneOf',
  'allOf',
  'defs',
  'ref',
  'format',
  'uniqueItems',
  'dependentRequired',
  'dependentSchemas',
  'minProperties',
  'maxProperties',
  'not',
  'if-then-else',
];
const FORMATS = ['date-time', 'date', 'time', 'duration', 'email', 'hostname', 'ipv4', 'ipv6', 'uuid', 'uri', 'uri-reference', 'unknown'];

const FOLDER = suiteFolder();
const FILES = FOLDER === null ? [] : [...[...KEYWORDS, ...MORE_KEYWORDS].map((k) => `${k}.json`), ...FORMATS.map((f) => `optional/format/${f}.json`)];

const NARROWS_TO_THE_TYPE = 'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated';
/** format.json's formats the grammar enforces: a bare `format` of one of them is read as a string of that format, so the suite's non-strings are not generated. */
const FORMAT_JSON_ENFORCED = ['email', 'ipv4', 'ipv6', 'hostname', 'date', 'date-time', 'time', 'uri', 'uri-reference', 'uuid', 'duration'];
const NON_STRINGS = ['integers', 'floats', 'objects', 'arrays', 'booleans', 'nulls'];

/** "file: case: test" → why the grammar and the suite disagree there. */
const KNOWN_EXCEPTIONS: ReadonlyMap<string, string> = new Map([
  ...FORMAT_JSON_ENFORCED.flatMap((format) => NON_STRINGS.map((kind) => [`format.json: ${format} format: all string formats ignore ${kind}`, NARROWS_TO_THE_TYPE] as const)),
  ...['arrays', 'strings', 'other non-objects'].map((kind) => [`maxProperties.json: maxProperties validation: ignores ${kind}`, NARROWS_TO_THE_TYPE] as const),
  [
    'exclusiveMaximum.json: exclusiveMaximum validation: ignores non-numbers',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'exclusiveMinimum.json: exclusiveMinimum validation: ignores non-numbers',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'items.json: a schema given for items: JavaScript pseudo-array is valid',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'items.json: a schema given for items: ignores non-arrays',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'maxItems.json: maxItems validation: ignores non-arrays',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'maxLength.json: maxLength validation: ignores non-strings',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'maximum.json: maximum validation: ignores non-numbers',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'minItems.json: minItems validation: ignores non-arrays',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'minLength.json: minLength validation: ignores non-strings',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'minimum.json: minimum validation with signed integer: ignores non-numbers',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'minimum.json: minimum validation: ignores non-numbers',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'multipleOf.json: by int: ignores non-numbers',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  ['optional/format/date-time.json: validation of date-time strings: a valid date-time with a leap second, UTC', 'date-time / time formats refuse second 60 (leap seconds)'],
  ['optional/format/date-time.json: validation of date-time strings: a valid date-time with a leap second, with minus offset', 'date-time / time formats refuse second 60 (leap seconds)'],
  [
    'optional/format/date-time.json: validation of date-time strings: all string formats ignore arrays',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/date-time.json: validation of date-time strings: all string formats ignore booleans',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/date-time.json: validation of date-time strings: all string formats ignore floats',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/date-time.json: validation of date-time strings: all string formats ignore integers',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/date-time.json: validation of date-time strings: all string formats ignore nulls',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/date-time.json: validation of date-time strings: all string formats ignore objects',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/date.json: validation of date strings: all string formats ignore arrays',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/date.json: validation of date strings: all string formats ignore booleans',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/date.json: validation of date strings: all string formats ignore floats',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/date.json: validation of date strings: all string formats ignore integers',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/date.json: validation of date strings: all string formats ignore nulls',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/date.json: validation of date strings: all string formats ignore objects',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/duration.json: validation of duration strings: all string formats ignore arrays',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/duration.json: validation of duration strings: all string formats ignore booleans',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/duration.json: validation of duration strings: all string formats ignore floats',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/duration.json: validation of duration strings: all string formats ignore integers',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/duration.json: validation of duration strings: all string formats ignore nulls',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/duration.json: validation of duration strings: all string formats ignore objects',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/email.json: validation of e-mail addresses: all string formats ignore arrays',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/email.json: validation of e-mail addresses: all string formats ignore booleans',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/email.json: validation of e-mail addresses: all string formats ignore floats',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/email.json: validation of e-mail addresses: all string formats ignore integers',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/email.json: validation of e-mail addresses: all string formats ignore nulls',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/email.json: validation of e-mail addresses: all string formats ignore objects',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/hostname.json: validation of host names: all string formats ignore arrays',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/hostname.json: validation of host names: all string formats ignore booleans',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/hostname.json: validation of host names: all string formats ignore floats',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/hostname.json: validation of host names: all string formats ignore integers',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/hostname.json: validation of host names: all string formats ignore nulls',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/hostname.json: validation of host names: all string formats ignore objects',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/ipv4.json: validation of IP addresses: all string formats ignore arrays',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/ipv4.json: validation of IP addresses: all string formats ignore booleans',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/ipv4.json: validation of IP addresses: all string formats ignore floats',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/ipv4.json: validation of IP addresses: all string formats ignore integers',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/ipv4.json: validation of IP addresses: all string formats ignore nulls',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/ipv4.json: validation of IP addresses: all string formats ignore objects',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/ipv6.json: validation of IPv6 addresses: all string formats ignore arrays',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/ipv6.json: validation of IPv6 addresses: all string formats ignore booleans',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/ipv6.json: validation of IPv6 addresses: all string formats ignore floats',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/ipv6.json: validation of IPv6 addresses: all string formats ignore integers',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/ipv6.json: validation of IPv6 addresses: all string formats ignore nulls',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/ipv6.json: validation of IPv6 addresses: all string formats ignore objects',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  ['optional/format/time.json: validation of time strings: a valid time string with leap second, Zulu', 'date-time / time formats refuse second 60 (leap seconds)'],
  [
    'optional/format/time.json: validation of time strings: all string formats ignore arrays',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/time.json: validation of time strings: all string formats ignore booleans',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/time.json: validation of time strings: all string formats ignore floats',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/time.json: validation of time strings: all string formats ignore integers',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/time.json: validation of time strings: all string formats ignore nulls',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/time.json: validation of time strings: all string formats ignore objects',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  ['optional/format/time.json: validation of time strings: valid leap second, large negative time-offset', 'date-time / time formats refuse second 60 (leap seconds)'],
  ['optional/format/time.json: validation of time strings: valid leap second, large positive time-offset', 'date-time / time formats refuse second 60 (leap seconds)'],
  ['optional/format/time.json: validation of time strings: valid leap second, negative time-offset', 'date-time / time formats refuse second 60 (leap seconds)'],
  ['optional/format/time.json: validation of time strings: valid leap second, positive time-offset', 'date-time / time formats refuse second 60 (leap seconds)'],
  ['optional/format/time.json: validation of time strings: valid leap second, zero time-offset', 'date-time / time formats refuse second 60 (leap seconds)'],
  [
    'optional/format/uuid.json: uuid format: all string formats ignore arrays',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/uuid.json: uuid format: all string formats ignore booleans',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/uuid.json: uuid format: all string formats ignore floats',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/uuid.json: uuid format: all string formats ignore integers',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/uuid.json: uuid format: all string formats ignore nulls',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/uuid.json: uuid format: all string formats ignore objects',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'pattern.json: pattern validation: ignores arrays',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'pattern.json: pattern validation: ignores booleans',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'pattern.json: pattern validation: ignores floats',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'pattern.json: pattern validation: ignores integers',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'pattern.json: pattern validation: ignores null',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'pattern.json: pattern validation: ignores objects',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'prefixItems.json: a schema given for prefixItems: JavaScript pseudo-array is valid',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'properties.json: object properties validation: ignores arrays',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'properties.json: object properties validation: ignores other non-objects',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'properties.json: properties whose names are Javascript object property names: ignores arrays',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'properties.json: properties whose names are Javascript object property names: ignores other non-objects',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  ['ref.json: root pointer ref: match', 'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated'],
  [
    'ref.json: root pointer ref: recursive match',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'required.json: required properties whose names are Javascript object property names: ignores arrays',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'required.json: required properties whose names are Javascript object property names: ignores other non-objects',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'required.json: required validation: ignores arrays',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'required.json: required validation: ignores boolean',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'required.json: required validation: ignores null',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'required.json: required validation: ignores other non-objects',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'required.json: required validation: ignores strings',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/hostname.json: validation of A-label (punycode) host names: Arabic-Indic digits mixed with Extended Arabic-Indic digits',
    'hostname format checks label syntax only, not Punycode / IDNA rules of xn-- labels',
  ],
  ['optional/format/hostname.json: validation of A-label (punycode) host names: Begins with a Nonspacing Mark', 'hostname format checks label syntax only, not Punycode / IDNA rules of xn-- labels'],
  [
    'optional/format/hostname.json: validation of A-label (punycode) host names: Begins with a Spacing Combining Mark',
    'hostname format checks label syntax only, not Punycode / IDNA rules of xn-- labels',
  ],
  ['optional/format/hostname.json: validation of A-label (punycode) host names: Begins with an Enclosing Mark', 'hostname format checks label syntax only, not Punycode / IDNA rules of xn-- labels'],
  [
    'optional/format/hostname.json: validation of A-label (punycode) host names: Exceptions that are DISALLOWED, left-to-right chars',
    'hostname format checks label syntax only, not Punycode / IDNA rules of xn-- labels',
  ],
  [
    'optional/format/hostname.json: validation of A-label (punycode) host names: Exceptions that are DISALLOWED, right-to-left chars',
    'hostname format checks label syntax only, not Punycode / IDNA rules of xn-- labels',
  ],
  [
    'optional/format/hostname.json: validation of A-label (punycode) host names: Greek KERAIA not followed by Greek',
    'hostname format checks label syntax only, not Punycode / IDNA rules of xn-- labels',
  ],
  [
    'optional/format/hostname.json: validation of A-label (punycode) host names: Greek KERAIA not followed by anything',
    'hostname format checks label syntax only, not Punycode / IDNA rules of xn-- labels',
  ],
  [
    'optional/format/hostname.json: validation of A-label (punycode) host names: Hebrew GERESH not preceded by Hebrew',
    'hostname format checks label syntax only, not Punycode / IDNA rules of xn-- labels',
  ],
  [
    'optional/format/hostname.json: validation of A-label (punycode) host names: Hebrew GERESH not preceded by anything',
    'hostname format checks label syntax only, not Punycode / IDNA rules of xn-- labels',
  ],
  [
    'optional/format/hostname.json: validation of A-label (punycode) host names: Hebrew GERSHAYIM not preceded by Hebrew',
    'hostname format checks label syntax only, not Punycode / IDNA rules of xn-- labels',
  ],
  [
    'optional/format/hostname.json: validation of A-label (punycode) host names: Hebrew GERSHAYIM not preceded by anything',
    'hostname format checks label syntax only, not Punycode / IDNA rules of xn-- labels',
  ],
  [
    'optional/format/hostname.json: validation of A-label (punycode) host names: KATAKANA MIDDLE DOT with no Hiragana, Katakana, or Han',
    'hostname format checks label syntax only, not Punycode / IDNA rules of xn-- labels',
  ],
  [
    'optional/format/hostname.json: validation of A-label (punycode) host names: KATAKANA MIDDLE DOT with no other characters',
    'hostname format checks label syntax only, not Punycode / IDNA rules of xn-- labels',
  ],
  [
    "optional/format/hostname.json: validation of A-label (punycode) host names: MIDDLE DOT with no following 'l'",
    'hostname format checks label syntax only, not Punycode / IDNA rules of xn-- labels',
  ],
  [
    "optional/format/hostname.json: validation of A-label (punycode) host names: MIDDLE DOT with no preceding 'l'",
    'hostname format checks label syntax only, not Punycode / IDNA rules of xn-- labels',
  ],
  [
    'optional/format/hostname.json: validation of A-label (punycode) host names: MIDDLE DOT with nothing following',
    'hostname format checks label syntax only, not Punycode / IDNA rules of xn-- labels',
  ],
  [
    'optional/format/hostname.json: validation of A-label (punycode) host names: MIDDLE DOT with nothing preceding',
    'hostname format checks label syntax only, not Punycode / IDNA rules of xn-- labels',
  ],
  [
    'optional/format/hostname.json: validation of A-label (punycode) host names: ZERO WIDTH JOINER not preceded by Virama',
    'hostname format checks label syntax only, not Punycode / IDNA rules of xn-- labels',
  ],
  [
    'optional/format/hostname.json: validation of A-label (punycode) host names: ZERO WIDTH JOINER not preceded by anything',
    'hostname format checks label syntax only, not Punycode / IDNA rules of xn-- labels',
  ],
  [
    'optional/format/hostname.json: validation of A-label (punycode) host names: contains "--" in the 3rd and 4th position',
    'hostname format checks label syntax only, not Punycode / IDNA rules of xn-- labels',
  ],
  [
    'optional/format/hostname.json: validation of A-label (punycode) host names: contains illegal char U+302E Hangul single dot tone mark',
    'hostname format checks label syntax only, not Punycode / IDNA rules of xn-- labels',
  ],
  [
    'additionalProperties.json: additionalProperties being false does not allow other properties: ignores arrays',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'patternProperties.json: patternProperties validates properties matching a regex: ignores arrays',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'additionalProperties.json: additionalProperties being false does not allow other properties: ignores strings',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'patternProperties.json: patternProperties validates properties matching a regex: ignores strings',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'additionalProperties.json: additionalProperties being false does not allow other properties: ignores other non-objects',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'patternProperties.json: patternProperties validates properties matching a regex: ignores other non-objects',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/uri.json: validation of URIs: all string formats ignore integers',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/uri.json: validation of URIs: all string formats ignore floats',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/uri.json: validation of URIs: all string formats ignore objects',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/uri.json: validation of URIs: all string formats ignore arrays',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/uri.json: validation of URIs: all string formats ignore booleans',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/uri.json: validation of URIs: all string formats ignore nulls',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/uri-reference.json: validation of URI References: all string formats ignore integers',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/uri-reference.json: validation of URI References: all string formats ignore floats',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/uri-reference.json: validation of URI References: all string formats ignore objects',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/uri-reference.json: validation of URI References: all string formats ignore arrays',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/uri-reference.json: validation of URI References: all string formats ignore booleans',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  [
    'optional/format/uri-reference.json: validation of URI References: all string formats ignore nulls',
    'the grammar reads a type-specific keyword without `type` as that type (it generates, so it narrows): a valid value of another type is not generated',
  ],
  ['optional/format/hostname.json: validation of A-label (punycode) host names: invalid Punycode', 'hostname format checks label syntax only, not Punycode / IDNA rules of xn-- labels'],
]);

const xgrammar = loadXGrammar();
const tally = { cases: 0, translated: 0, refused: 0, accepted: 0, rejected: 0, notExpressible: 0, known: 0 };

function strictlyValid(schema: Json, data: Json): boolean {
  const ajv = new Ajv2020({ strict: false, validateFormats: true });
  addFormats.default(ajv);
  try {
    return ajv.compile(strictSchema(schema) as object)(data) === true;
  } catch {
    return true; // ajv cannot judge the strict form (a property named like a keyword): the instance counts as expressible
  }
}

/** The value at a JSON pointer ("#/a/b") inside the schema, or undefined. */
function at(schema: Json, pointer: string): Json | undefined {
  let node: Json | undefined = schema;
  for (const raw of pointer.replace(/^#\/?/, '').split('/').filter(Boolean)) {
    const key = decodeURIComponent(raw).replaceAll('~1', '/').replaceAll('~0', '~');
    node = typeof node === 'object' && node !== null ? (node as Record<string, Json>)[key] : undefined;
  }
  return node;
}

/** The instance's layouts to try: its own key order first, then (top-level objects) every other order of its keys. */
function layouts(data: Json): string[] {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return [layoutJson(data)];
  const entries = Object.entries(data);
  if (entries.length > 4) return [layoutJson(data)];
  const orders: (typeof entries)[] = [];
  const permute = (done: typeof entries, left: typeof entries): void => {
    if (left.length === 0) orders.push(done);
    left.forEach((entry, i) => permute([...done, entry], [...left.slice(0, i), ...left.slice(i + 1)]));
  };
  permute([], entries);
  return orders.map((order) => layoutJson(Object.fromEntries(order)));
}

describe.each(FILES)('JSON Schema Test Suite draft2020-12 %s', (file) => {
  const cases = JSON.parse(readFileSync(join(SUITE, file), 'utf8')) as SuiteCase[];
  it.each(cases.map((suiteCase) => [suiteCase.description, suiteCase] as const))('%s', async (caseName, suiteCase) => {
    tally.cases += 1;
    let ebnf: string;
    try {
      ebnf = schemaGrammar(suiteCase.schema, { absentAdditionalProperties: 'forbid' });
    } catch (error) {
      expect(error).toBeInstanceOf(SchemaUnsupported);
      const { keyword, path } = error as SchemaUnsupported;
      const holder = at(suiteCase.schema, path.slice(0, path.lastIndexOf('/')) || '#');
      const node = at(suiteCase.schema, path);
      const has = (value: Json | undefined): boolean => typeof value === 'object' && value !== null && keyword in value;
      // A refused $ref names the reference it could not follow (remote, $id-relative); "schema" is the name the grammar gives a schema no value satisfies (under strict mode); any other refusal names a keyword on the path.
      const named = keyword === 'schema' || keyword === '$ref' || has(node) || has(holder) || path.split('/').includes(keyword);
      expect(named, `refusal names ${keyword} at ${path}, which the schema has`).toBe(true);
      // A refused schema disagrees with no test: an exception listed for one of its tests is stale.
      const stale = suiteCase.tests.map((test) => `${file}: ${caseName}: ${test.description}`).filter((name) => KNOWN_EXCEPTIONS.has(name));
      expect(stale.map((name) => `${name}: a known exception, but the schema is now refused`).join('\n')).toBe('');
      tally.refused += 1;
      return;
    }
    tally.translated += 1;
    const grammar = await xgrammar.api.Grammar.fromEBNF(ebnf);
    const mismatches: string[] = [];
    try {
      for (const test of suiteCase.tests) {
        const name = `${file}: ${caseName}: ${test.description}`;
        let accepted = false;
        for (const text of test.valid ? layouts(test.data) : [layoutJson(test.data)]) {
          if (await xgrammar.api.Testings.isGrammarAcceptString(grammar, text)) accepted = true;
          if (accepted) break;
        }
        if (test.valid && !accepted && !strictlyValid(suiteCase.schema, test.data)) {
          tally.notExpressible += 1;
          continue;
        }
        if (KNOWN_EXCEPTIONS.has(name)) {
          // The list stays true: an exception whose test now agrees is stale and must go.
          if (accepted === test.valid) mismatches.push(`${name}: a known exception (${KNOWN_EXCEPTIONS.get(name)}), but the grammar now agrees with the suite: remove it`);
          else tally.known += 1;
          continue;
        }
        if (accepted !== test.valid) mismatches.push(`${name} (${layoutJson(test.data)}): ${test.valid ? 'valid, refused' : 'invalid, accepted'}`);
        else if (accepted) tally.accepted += 1;
        else tally.rejected += 1;
      }
    } finally {
      grammar.dispose();
    }
    expect(mismatches.join('\n')).toBe('');
  });
});

if (FOLDER !== null)
  it('names only tests the suite has in KNOWN_EXCEPTIONS', () => {
    const names = new Set(
      FILES.flatMap((file) => (JSON.parse(readFileSync(join(SUITE, file), 'utf8')) as SuiteCase[]).flatMap((c) => c.tests.map((test) => `${file}: ${c.description}: ${test.description}`))),
    );
    expect([...KNOWN_EXCEPTIONS.keys()].filter((name) => !names.has(name))).toEqual([]);
  });

if (FOLDER === null) it.skip('runs the JSON Schema Test Suite (not available here: see the line above)', () => undefined);

afterAll(() => {
  // The counts, for the report: how much of the suite the grammar takes on and how it fares.
  console.log(`JSON Schema Test Suite: ${JSON.stringify(tally)}`);
});
