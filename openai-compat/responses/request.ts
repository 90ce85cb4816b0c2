// A /v1/responses create request read into what the chat machinery takes: the fields checked
// (unknown ones and ones this server cannot honour refused with a 400 naming them), the
// Responses tools (tools.ts: function and custom) and tool_choice put in chat's shape for the tool plan, text.format put in
// response_format's shape for the structured-output vocabulary, reasoning.effort as the
// vocabulary's reasoning_effort, and the fields a response object echoes back. Errors from
// the shared checks are reworded into Responses' names (tools[0].name, text.format.schema).

import { ConveyorError, invalidArg } from '../../src/errors.js';
import { CONSTRAINT_FIELDS, readWireParams, wireFieldNames, type WireParams, type WireVocabulary } from '../../src/vocabulary/index.js';
import { OpenAIRequestError, unsupportedParameter } from '../errors.js';
import { checkFields, checkNoOps } from '../request-fields.js';
import { isObject, requireModel, type Body } from '../../src/server/kit/body.js';
import type { ForcedCustomTool } from '../custom-tools.js';
import { forcedCustomTool, readTools, type ResponsesTools } from './tools.js';

/**
 * The vocabulary under Responses' names: max_output_tokens for max_tokens; output constraints
 * come in text.format and the effort in reasoning.effort; no logprobs output.
 */
export const RESPONSES_VOCABULARY: WireVocabulary = {
  omit: [...CONSTRAINT_FIELDS, 'logprobs', 'top_logprobs', 'prompt_logprobs', 'max_tokens', 'reasoning_effort'],
  aliases: { max_output_tokens: 'max_tokens' },
};

const absent = (v: unknown): boolean => v === undefined || v === null;

/** Responses fields this server refuses, each with the test for a value that needs the missing feature. */
const UNSUPPORTED: Readonly<Record<string, (value: unknown) => boolean>> = {
  include: (v) => !(Array.isArray(v) && v.length === 0),
  truncation: (v) => v !== 'disabled',
  service_tier: (v) => v !== 'auto' && v !== 'default',
  top_logprobs: (v) => v !== 0,
  max_tool_calls: () => true,
  prompt: () => true,
  conversation: () => true,
  context_management: () => true,
  moderation: () => true,
  image: () => true,
  access_programs: () => true,
  prompt_cache_options: () => true,
  prompt_cache_retention: () => true,
  // Obfuscation pads events against side channels; only "no padding" is honoured.
  stream_options: (v) => !(isObject(v) && Object.entries(v).every(([key, value]) => key === 'include_obfuscation' && value === false)),
};

const FIELDS = new Set([
  'model',
  'input',
  'instructions',
  'tools',
  'tool_choice',
  'parallel_tool_calls',
  'text',
  'reasoning',
  'metadata',
  'store',
  'user',
  'stream',
  'previous_response_id',
  'background',
  'safety_identifier',
  'prompt_cache_key',
  // vLLM's extension, e.g. {enable_thinking: false}.
  'chat_template_kwargs',
  ...wireFieldNames(RESPONSES_VOCABULARY),
  ...Object.keys(UNSUPPORTED),
]);

export interface ResponsesRequest {
  /** The model as the client named it. */
  readonly model: string;
  readonly stream: boolean;
  readonly store: boolean;
  /** Answer at once with a queued response and generate detached from the client (GET polls, cancel aborts). */
  readonly background: boolean;
  readonly previousResponseId: string | null;
  readonly instructions: string | null;
  readonly input: unknown;
  /** tools / tool_choice / parallel_tool_calls in chat's shape, for chatToolPlan. */
  readonly chatTools: Body;
  /** The tools as read (custom tools by name: their calls are custom_tool_call items). */
  readonly tools: ResponsesTools;
  /** tool_choice forcing a custom tool: the whole output is its input. */
  readonly forcedCustom: ForcedCustomTool | null;
  readonly sampling: WireParams;
  readonly chatTemplateKwargs: Readonly<Record<string, unknown>> | null;
  /** The request's settings as a response object states them. */
  readonly echo: Readonly<Record<string, unknown>>;
}

function optionalBoolean(body: Body, key: string, fallback: boolean): boolean {
  const value = body[key];
  if (absent(value)) return fallback;
  if (typeof value !== 'boolean') throw invalidArg(`${key} must be a boolean`, key);
  return value;
}

function optionalString(body: Body, key: string): string | null {
  const value = body[key];
  if (absent(value)) return null;
  if (typeof value !== 'string') throw invalidArg(`${key} must be a string`, key);
  return value;
}

export function readResponsesRequest(raw: Body): ResponsesRequest {
  for (const [key, refuses] of Object.entries(UNSUPPORTED)) if (!absent(raw[key]) && refuses(raw[key])) throw unsupportedParameter(key);
  checkFields(raw, FIELDS);
  checkNoOps(raw);
  const model = requireModel(raw);
  if (absent(raw.input)) throw invalidArg('input is required', 'input');
  const metadata = raw.metadata ?? null;
  if (metadata !== null && !(isObject(metadata) && Object.values(metadata).every((v) => typeof v === 'string'))) throw invalidArg('metadata must be an object of string values', 'metadata');
  const kwargs = raw.chat_template_kwargs ?? null;
  if (kwargs !== null && !isObject(kwargs)) throw invalidArg('chat_template_kwargs must be an object', 'chat_template_kwargs');
  const effort = reasoningEffort(raw.reasoning);
  const format = textFormat(raw.text);
  const tools = readTools(raw.tools);
  const forced = forcedCustomTool(raw.tool_choice, tools);
  const wire = readWireParams(raw, RESPONSES_VOCABULARY);
  const store = optionalBoolean(raw, 'store', true);
  const parallel = raw.parallel_tool_calls ?? true;
  const stream = optionalBoolean(raw, 'stream', false);
  const background = optionalBoolean(raw, 'background', false);
  if (background && !store) throw invalidArg('background responses must be stored: store cannot be false with background true', 'store');
  if (background && stream) throw unsupportedParameter('background', 'together with stream is not supported by this server (poll GET /v1/responses/{id} instead)');
  return {
    model,
    stream,
    store,
    background,
    previousResponseId: optionalString(raw, 'previous_response_id'),
    instructions: optionalString(raw, 'instructions'),
    input: raw.input,
    // A forced custom tool is no chat tool_choice: the tools are shown, the output is read as its input.
    chatTools: { tools: tools.chatTools, tool_choice: forced ? 'none' : chatToolChoice(raw.tool_choice), parallel_tool_calls: parallel },
    tools,
    forcedCustom: forced,
    sampling: {
      sampling: { ...wire.sampling, ...(format.responseFormat === null ? {} : { response_format: format.responseFormat }), ...(effort === null ? {} : { reasoning_effort: effort }) },
      wireNames: { ...wire.wireNames, response_format: 'text.format', reasoning_effort: 'reasoning.effort' },
    },
    chatTemplateKwargs: kwargs,
    echo: {
      background,
      instructions: raw.instructions ?? null,
      max_output_tokens: raw.max_output_tokens ?? null,
      metadata: metadata ?? {},
      parallel_tool_calls: parallel,
      previous_response_id: raw.previous_response_id ?? null,
      reasoning: { effort, summary: null },
      store,
      temperature: raw.temperature ?? 1,
      text: { format: format.echo, verbosity: 'medium' },
      tool_choice: raw.tool_choice ?? 'auto',
      tools: tools.echo,
      top_p: raw.top_p ?? 1,
      truncation: 'disabled',
      user: raw.user ?? null,
    },
  };
}

/**
 * reasoning.effort is the vocabulary's reasoning_effort: checked there, each level a
 * thinking-token budget, "none" the template's thinking switch off (the input processor's rule).
 */
function reasoningEffort(reasoning: unknown): unknown {
  if (absent(reasoning)) return null;
  if (!isObject(reasoning)) throw invalidArg('reasoning must be an object', 'reasoning');
  for (const key of Object.keys(reasoning)) if (key !== 'effort' && key !== 'summary' && !absent(reasoning[key])) throw unsupportedParameter(`reasoning.${key}`);
  // Summaries are written by a second model pass this server does not make; "auto" leaves it to the server.
  if (!absent(reasoning.summary) && reasoning.summary !== 'auto') throw unsupportedParameter('reasoning.summary', 'other than "auto" is not supported by this server (no summaries are generated)');
  return reasoning.effort ?? null;
}

/** text.format as response_format (null: unconstrained) and as the response echoes it. */
function textFormat(text: unknown): { responseFormat: Body | null; echo: Body } {
  const plain = { responseFormat: null, echo: { type: 'text' } };
  if (absent(text)) return plain;
  if (!isObject(text)) throw invalidArg('text must be an object', 'text');
  for (const key of Object.keys(text)) if (key !== 'format' && key !== 'verbosity' && !absent(text[key])) throw unsupportedParameter(`text.${key}`);
  if (!absent(text.verbosity) && text.verbosity !== 'medium') throw unsupportedParameter('text.verbosity', 'other than "medium" is not supported by this server');
  const format = text.format;
  if (absent(format)) return plain;
  if (!isObject(format)) throw invalidArg('text.format must be an object with a type', 'text.format');
  if (format.type === 'json_schema') {
    const { type: _, ...jsonSchema } = format;
    return { responseFormat: { type: 'json_schema', json_schema: jsonSchema }, echo: format };
  }
  return { responseFormat: format, echo: format };
}

function chatToolChoice(choice: unknown): unknown {
  if (!isObject(choice)) return choice;
  if (choice.type === 'function' && typeof choice.name === 'string') return { type: 'function', function: { name: choice.name } };
  throw invalidArg('tool_choice must be "none", "auto", "required", {"type": "function", "name": ...} or {"type": "custom", "name": ...}', 'tool_choice');
}

/** Chat's names in an error message or param, in Responses' terms. */
function responsesTerms(text: string): string {
  return text
    .replace(/tools\[(\d+)\]\.function\./g, 'tools[$1].')
    .replace(/text\.format\.json_schema\b\.?/g, 'text.format.')
    .replace(/text\.format\.(?=\s|$|')/g, 'text.format')
    .replace(/\bresponse_format\b/g, 'text.format');
}

/** Runs a shared check, rewording its rejection into Responses' field names. */
export async function inResponsesTerms<T>(run: () => T | Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (!(error instanceof ConveyorError)) throw error;
    const param = error.param === undefined ? undefined : error.param === 'messages' ? 'input' : responsesTerms(error.param);
    const message = responsesTerms(error.message);
    if (error instanceof OpenAIRequestError) throw new OpenAIRequestError(error.code, message, param, error.openaiCode, error.headers);
    throw new ConveyorError(error.code, message, param);
  }
}
