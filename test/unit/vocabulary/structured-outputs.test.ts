// The structured-output fields of the vocabulary: each wire shape translates to one GrammarSpec
// (schemas as canonical text), and every bad input is an INVALID_ARG naming the part at fault.
import { describe, expect, it } from 'vitest';
import type { GrammarSpec } from '../../../src/contracts/generate.js';
import { ConveyorError } from '../../../src/errors.js';
import { MAX_SCHEMA_CHARS, MAX_SCHEMA_DEPTH, type UncheckedParams, type WireNames } from '../../../src/vocabulary/index.js';
import { validateSamplingParams } from '../../../src/vocabulary/sampling-params.js';

const LIMITS = { vocabSize: 151_669 };
const grammarOf = (raw: UncheckedParams): GrammarSpec | null => validateSamplingParams(raw, LIMITS).grammar;

function rejection(raw: UncheckedParams, names: WireNames = {}): ConveyorError {
  try {
    validateSamplingParams(raw, LIMITS, {}, names);
  } catch (error) {
    expect(error).toBeInstanceOf(ConveyorError);
    expect((error as ConveyorError).code).toBe('INVALID_ARG');
    return error as ConveyorError;
  }
  throw new Error(`accepted ${JSON.stringify(raw)}`);
}

const PERSON = { type: 'object', properties: { name: { type: 'string' }, age: { type: 'integer', minimum: 0 } }, required: ['name', 'age'], additionalProperties: false };
const PERSON_TEXT = '{"additionalProperties":false,"properties":{"name":{"type":"string"},"age":{"minimum":0,"type":"integer"}},"required":["name","age"],"type":"object"}';
const jsonSchema = (schema: unknown) => ({ type: 'json_schema', json_schema: { name: 'person', schema, strict: true } });

describe('structured outputs → GrammarSpec', () => {
  it('is null without a constraint, and for response_format text', () => {
    expect(grammarOf({})).toBeNull();
    expect(grammarOf({ response_format: { type: 'text' } })).toBeNull();
    expect(grammarOf({ response_format: null, guided_json: null })).toBeNull();
  });

  it("translates response_format json_object and json_schema (canonical text: keys sorted but properties', whose order is the output's)", () => {
    expect(grammarOf({ response_format: { type: 'json_object' } })).toEqual({ kind: 'json_object' });
    expect(grammarOf({ response_format: jsonSchema(PERSON) })).toEqual({ kind: 'json_schema', schema: PERSON_TEXT });
    // Equal schemas written in another keyword order share one canonical text (one compile).
    const reordered = { required: ['name', 'age'], additionalProperties: false, properties: { name: { type: 'string' }, age: { minimum: 0, type: 'integer' } }, type: 'object' };
    expect(grammarOf({ response_format: jsonSchema(reordered) })).toEqual({ kind: 'json_schema', schema: PERSON_TEXT });
    // Properties in another order are another schema: the output writes its keys in that order.
    const ageFirst = { ...PERSON, properties: { age: PERSON.properties.age, name: PERSON.properties.name } };
    expect(grammarOf({ response_format: jsonSchema(ageFirst) })).toEqual({
      kind: 'json_schema',
      schema: PERSON_TEXT.replace('"name":{"type":"string"},"age":{"minimum":0,"type":"integer"}', '"age":{"minimum":0,"type":"integer"},"name":{"type":"string"}'),
    });
  });

  it("translates every member of vLLM's structured_outputs and the guided_* fields", () => {
    expect(grammarOf({ structured_outputs: { json: PERSON } })).toEqual({ kind: 'json_schema', schema: PERSON_TEXT });
    expect(grammarOf({ structured_outputs: { json: JSON.stringify(PERSON) } })).toEqual({ kind: 'json_schema', schema: PERSON_TEXT });
    expect(grammarOf({ structured_outputs: { regex: '\\d{3}-\\d{4}' } })).toEqual({ kind: 'regex', pattern: '\\d{3}-\\d{4}' });
    expect(grammarOf({ structured_outputs: { choice: ['yes', 'no', 'yes'] } })).toEqual({ kind: 'choice', choices: ['yes', 'no'] });
    expect(grammarOf({ structured_outputs: { grammar: 'root ::= "a" | "b"' } })).toEqual({ kind: 'ebnf', grammar: 'root ::= "a" | "b"' });
    expect(grammarOf({ structured_outputs: { json_object: true } })).toEqual({ kind: 'json_object' });
    expect(grammarOf({ guided_json: PERSON })).toEqual({ kind: 'json_schema', schema: PERSON_TEXT });
    expect(grammarOf({ guided_regex: '[a-z]+' })).toEqual({ kind: 'regex', pattern: '[a-z]+' });
    expect(grammarOf({ guided_choice: ['red', 'green'] })).toEqual({ kind: 'choice', choices: ['red', 'green'] });
    expect(grammarOf({ guided_grammar: 'root ::= "x"' })).toEqual({ kind: 'ebnf', grammar: 'root ::= "x"' });
  });

  it('accepts recursive schemas whose $ref consumes input, and draft-07 and 2020-12 dialects', () => {
    const tree = { type: 'object', properties: { children: { type: 'array', items: { $ref: '#' } } } };
    expect(grammarOf({ guided_json: tree })?.kind).toBe('json_schema');
    const draft07 = { $schema: 'http://json-schema.org/draft-07/schema#', definitions: { n: { type: 'number' } }, type: 'array', items: [{ $ref: '#/definitions/n' }] };
    expect(grammarOf({ guided_json: draft07 })?.kind).toBe('json_schema');
    const draft2020 = { $schema: 'https://json-schema.org/draft/2020-12/schema', $defs: { n: { type: 'number' } }, type: 'array', prefixItems: [{ $ref: '#/$defs/n' }] };
    expect(grammarOf({ guided_json: draft2020 })?.kind).toBe('json_schema');
  });
});

describe('structured outputs: bad input names the param', () => {
  const cases: [string, UncheckedParams, string, RegExp][] = [
    ['an invalid schema', { response_format: jsonSchema({ type: 'nope' }) }, 'response_format.json_schema.schema', /not a valid JSON Schema/],
    [
      'a $ref cycle',
      { response_format: jsonSchema({ $defs: { a: { $ref: '#/$defs/b' }, b: { anyOf: [{ $ref: '#/$defs/a' }] } }, $ref: '#/$defs/a' }) },
      'response_format.json_schema.schema',
      /\$ref cycle/,
    ],
    ['a self $ref', { guided_json: { $ref: '#' } }, 'guided_json', /\$ref cycle/],
    ['an unresolvable $ref', { structured_outputs: { json: { $ref: '#/$defs/missing' } } }, 'structured_outputs.json', /does not resolve/],
    ['a remote $ref', { guided_json: { $ref: 'https://example.com/schema.json' } }, 'guided_json', /only local references/],
    ['a schema that is not JSON', { guided_json: '{"type":' }, 'guided_json', /not valid JSON/],
    ['a schema that is not an object', { guided_json: 42 }, 'guided_json', /must be a JSON Schema/],
    ['a regex that does not compile', { guided_regex: '(unclosed' }, 'guided_regex', /not a valid regular expression/],
    ['a bad quantifier in a regex', { structured_outputs: { regex: 'a{2,1}' } }, 'structured_outputs.regex', /not a valid regular expression/],
    ['an empty choice list', { guided_choice: [] }, 'guided_choice', /non-empty array of strings/],
    ['a choice that is not a string', { structured_outputs: { choice: ['a', 7] } }, 'structured_outputs.choice[1]', /non-empty strings/],
    ['an empty grammar', { guided_grammar: '  ' }, 'guided_grammar', /non-empty string/],
    ['an unknown response_format type', { response_format: { type: 'xml' } }, 'response_format.type', /must be one of/],
    ['a json_schema without a valid name', { response_format: { type: 'json_schema', json_schema: { name: 'has space', schema: {} } } }, 'response_format.json_schema.name', /letters, digits/],
    ['an unknown json_schema key', { response_format: { type: 'json_schema', json_schema: { name: 'x', schema: {}, strictly: true } } }, 'response_format.json_schema.strictly', /not supported/],
    ['two structured_outputs members', { structured_outputs: { json: {}, regex: 'a' } }, 'structured_outputs.regex', /cannot be combined with structured_outputs.json/],
    ['an unknown structured_outputs member', { structured_outputs: { whitespace_pattern: ' ' } }, 'structured_outputs.whitespace_pattern', /not supported/],
    ['guided_json with response_format', { response_format: jsonSchema(PERSON), guided_json: PERSON }, 'guided_json', /cannot be combined with response_format/],
    ['guided_regex with structured_outputs', { structured_outputs: { json_object: true }, guided_regex: 'a' }, 'guided_regex', /cannot be combined with structured_outputs/],
  ];
  it.each(cases)('%s', (_name, raw, param, message) => {
    const error = rejection(raw);
    expect(error.param).toBe(param);
    expect(error.message).toMatch(message);
    expect(error.message.startsWith(param)).toBe(true);
  });

  it('refuses schemas beyond the size and depth limits', () => {
    const big = { type: 'object', properties: Object.fromEntries(Array.from({ length: 4000 }, (_, i) => [`property_${i}`, { type: 'string' }])) };
    expect(JSON.stringify(big).length).toBeGreaterThan(MAX_SCHEMA_CHARS);
    expect(rejection({ guided_json: big }).message).toMatch(new RegExp(`at most ${MAX_SCHEMA_CHARS}`));
    let deep: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < MAX_SCHEMA_DEPTH; i++) deep = { type: 'array', items: deep };
    expect(rejection({ response_format: jsonSchema(deep) })).toMatchObject({ param: 'response_format.json_schema.schema', message: expect.stringMatching(/nests deeper/) });
  });

  it("uses the caller's wire name for an aliased field", () => {
    expect(rejection({ structured_outputs: { regex: '(' } }, { structured_outputs: 'guided_decoding' }).param).toBe('guided_decoding.regex');
  });
});
