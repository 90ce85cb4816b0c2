// GET /v1/models and /v1/models/{id}: every READY LLM and embedding model, in OpenAI's list
// shape, plus vLLM's `root` and (for LLMs) `max_model_len`, which benchmark tools read, and
// `precision` / `model_file`: the variant serving; `state`: a loaded model whose workers are restarting after a crash stays listed, UNAVAILABLE.
// `capabilities` (a Conveyor extension; OpenAI's own cards have none) says what a model serves,
// so a client can tell before sending whether structured outputs or tool calls are available.

import { GRAMMAR_KINDS } from '../src/vocabulary/index.js';
import type { OpenAIContext } from './context.js';
import { modelNotFound } from './errors.js';

export interface ModelCard {
  readonly id: string;
  readonly object: 'model';
  readonly created: number;
  readonly owned_by: string;
  readonly root: string;
  /** The precision variant serving (fp32, fp16, int8, q4, ...; `custom` outside the table) and the file it runs: changes with a swap. */
  readonly precision: string;
  readonly model_file: string;
  readonly max_model_len?: number;
  /** READY while it takes requests; UNAVAILABLE while its workers restart or after a crash loop. */
  readonly state: 'READY' | 'UNAVAILABLE';
  readonly capabilities: ModelCapabilities;
}

export interface ModelCapabilities {
  /** /v1/completions and /v1/chat/completions (LLMs). */
  readonly text_generation: boolean;
  /** /v1/embeddings. */
  readonly embeddings: boolean;
  /** The output constraints a request may carry (response_format, structured_outputs, guided_*): json_object, json_schema, regex, choice, ebnf. */
  readonly structured_outputs: readonly string[];
  /** `tools` / `tool_choice` in chat requests. */
  readonly tool_calls: boolean;
  /** Thinking split into `reasoning_content` (the `reasoning_parser` parameter); budgets and effort levels apply. */
  readonly reasoning: boolean;
}

const EMBEDDING_CAPABILITIES: ModelCapabilities = { text_generation: false, embeddings: true, structured_outputs: [], tool_calls: false, reasoning: false };

export const OWNER = 'conveyor';

/** Tool calls and reasoning need a parser for the model family's format (the `tool_call_parser` and `reasoning_parser` parameters). */
const llmCapabilities = (model: { readonly toolCallParser: unknown; readonly reasoningParser: unknown }): ModelCapabilities => ({
  text_generation: true,
  embeddings: false,
  structured_outputs: GRAMMAR_KINDS,
  tool_calls: model.toolCallParser !== null,
  reasoning: model.reasoningParser !== null,
});

export function modelCards(ctx: OpenAIContext): ModelCard[] {
  const cards = new Map<string, ModelCard>();
  const card = (id: string, capabilities: ModelCapabilities, extra: { max_model_len?: number } = {}): ModelCard => {
    const state = ctx.service.modelReady(id) ? 'READY' : 'UNAVAILABLE';
    const { precision, model_file } = ctx.service.modelMetadata(id).parameters;
    return { id, object: 'model', created: ctx.startedAt, owned_by: OWNER, root: id, precision, model_file, ...extra, state, capabilities };
  };
  for (const model of ctx.service.llmModels()) {
    if (!cards.has(model.name)) cards.set(model.name, card(model.name, llmCapabilities(model), { max_model_len: model.processor.info.contextLength }));
  }
  for (const model of ctx.embeddings.list()) if (!cards.has(model.name)) cards.set(model.name, card(model.name, EMBEDDING_CAPABILITIES));
  return [...cards.values()].sort((a, b) => a.id.localeCompare(b.id));
}

export function listModels(ctx: OpenAIContext): { object: 'list'; data: ModelCard[] } {
  return { object: 'list', data: modelCards(ctx) };
}

export function retrieveModel(ctx: OpenAIContext, id: string): ModelCard {
  const found = modelCards(ctx).find((m) => m.id === id);
  if (!found) throw modelNotFound(id);
  return found;
}
