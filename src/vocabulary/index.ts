// The generation request vocabulary (main thread): one declaration, its derived types and
// validator, and the mapping of each protocol's wire names onto it.

export { GENERATION_FIELDS, generationParamsSchema, LOGIT_BIAS_LIMIT, MAX_LOGIT_BIAS_ENTRIES, MAX_LOGPROBS, MAX_STOP_STRINGS, REASONING_EFFORTS, valueKind } from './declaration.js';
export type { GenerationField, GenerationLimits, GenerationParams, GenerationParamsInput, ReasoningEffort } from './declaration.js';
export { checkTokenIds, parseGenerationParams, wireName, type UncheckedParams, type WireNames } from './parse.js';
export type { ValueKind } from './rules.js';
export { carriedFields, readWireParams, wireFieldNames, type WireParams, type WireVocabulary } from './wire.js';
export { MAX_SCHEMA_CHARS, MAX_SCHEMA_DEPTH } from './json-schema-check.js';
export { CONSTRAINT_FIELDS, GRAMMAR_KINDS, MAX_CHOICE_CHARS, MAX_CHOICES, MAX_GRAMMAR_CHARS, MAX_REGEX_CHARS } from './structured-outputs.js';
export { MAX_TOOLS, parseToolRequest, TOOL_NAME_PATTERN, type UncheckedToolFields } from './tools.js';
export { canonicalSchemaJson } from './canonical-json.js';
export { isObject } from './json-object.js';
