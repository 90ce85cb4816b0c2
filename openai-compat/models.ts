// GET /v1/models and /v1/models/{id}: every READY LLM and embedding model, in OpenAI's list
// shape, plus vLLM's `root` and (for LLMs) `max_model_len`, which benchmark tools read, and
// `precision` / `model_file`: the variant serving; `state`: a loaded model whose workers are restarting after a crash stays listed, UNAVAILABLE.
// `capabilities` (a Conveyor extension; OpenAI's own cards have none) says what a model serves,
// so a client can tell before sending whether structured outputs or tool calls are available.
// With --load-on-demand the list also holds the repository's models that are not loaded
// (`state` UNLOADED, or LOADING while a load runs) and any put to sleep (SLEEPING): a request
// naming an unloaded one loads it.

import { GRAMMAR_KINDS } from '../src/vocabulary/index.js';
import type { ModelConfig } from '../src/contracts/model-config.js';
import { repositoryModelName, SERVED_MODEL_NAME_PARAMETER } from '../src/contracts/model-names.js';
import { reasoningParserOf, toolCallParserOf } from '../src/serving/llm-parameters.js';
import type { ResidencyState } from '../src/serving/model-residency.js';
import { isEmbeddingModel } from './embedding-models.js';
import type { OpenAIContext } from './context.js';
import { modelNotFound } from '../src/server/kit/errors.js';

export interface ModelCard {
  readonly id: string;
  readonly object: 'model';
  readonly created: number;
  readonly owned_by: string;
  readonly root: string;
  /** The precision variant serving (fp32, fp16, int8, q4, ...; `custom` outside the table) and the file it runs: changes with a swap. */
  readonly precision: string;
  /** Absent for a model not loaded: the file is chosen when it loads. */
  readonly model_file?: string;
  readonly max_model_len?: number;
  /**
   * READY while it takes requests; UNAVAILABLE while its workers restart or after a crash loop;
   * UNLOADED (loads on its first request), LOADING, SLEEPING (POST /wake_up) with --load-on-demand or after /sleep.
   */
  readonly state: 'UNAVAILABLE' | ResidencyState;
  readonly capabilities: ModelCapabilities;
  /** A model served from the Hugging Face Hub: its repository (ORG/NAME), the revision asked for and the commit it resolved to. */
  readonly hf_repo?: string;
  readonly revision?: string;
  readonly commit?: string;
}

/**
 * The id a model is served as (its served_model_name parameter: ORG/NAME for a Hub model, as
 * vLLM; else its repository name) and, for a Hub model, where its files came from.
 */
function servedAs(name: string, config: ModelConfig | undefined): { id: string; source: Pick<ModelCard, 'hf_repo' | 'revision' | 'commit'> } {
  const parameter = (key: string): string | undefined => config?.parameters[key]?.string_value || undefined;
  const repo = parameter('hf_repo');
  const source = repo ? { hf_repo: repo, revision: parameter('hf_revision') ?? 'main', commit: parameter('hf_commit') ?? '' } : {};
  return { id: parameter(SERVED_MODEL_NAME_PARAMETER) ?? name, source };
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

/** Capabilities read from a config.pbtxt (a model not loaded); a parser parameter the load would refuse reads as absent. */
function configCapabilities(config: ModelConfig): ModelCapabilities | undefined {
  if (config.backend === 'llm') {
    const orNull = <T>(read: () => T): T | null => {
      try {
        return read();
      } catch {
        return null;
      }
    };
    return llmCapabilities({ toolCallParser: orNull(() => toolCallParserOf(config)), reasoningParser: orNull(() => reasoningParserOf(config)) });
  }
  return isEmbeddingModel(config) ? EMBEDDING_CAPABILITIES : undefined;
}

export async function modelCards(ctx: OpenAIContext): Promise<ModelCard[]> {
  const cards = new Map<string, ModelCard>();
  const card = (name: string, capabilities: ModelCapabilities, extra: { max_model_len?: number } = {}, config?: ModelConfig): ModelCard => {
    const state = ctx.service.modelReady(name) ? 'READY' : 'UNAVAILABLE';
    const { precision, model_file } = ctx.service.modelMetadata(name).parameters;
    const { id, source } = servedAs(name, config);
    return { id, object: 'model', created: ctx.startedAt, owned_by: OWNER, root: id, precision, model_file, ...extra, state, capabilities, ...source };
  };
  for (const model of ctx.service.llmModels()) {
    if (!cards.has(model.name)) cards.set(model.name, card(model.name, llmCapabilities(model), { max_model_len: model.processor.info.contextLength }, model.config));
  }
  for (const model of ctx.embeddings.list()) if (!cards.has(model.name)) cards.set(model.name, card(model.name, EMBEDDING_CAPABILITIES));
  for (const { name, state, config } of (await ctx.service.residency?.unloadedModels()) ?? []) {
    const capabilities = configCapabilities(config);
    // The variant its load would choose; the file is known once it loads.
    const precision = config.parameters['precision']?.string_value ?? 'fp32';
    const { id } = servedAs(name, config);
    if (capabilities && !cards.has(name)) cards.set(name, { id, object: 'model', created: ctx.startedAt, owned_by: OWNER, root: id, precision, state, capabilities });
  }
  return [...cards.values()].sort((a, b) => a.id.localeCompare(b.id));
}

export async function listModels(ctx: OpenAIContext): Promise<{ object: 'list'; data: ModelCard[] }> {
  return { object: 'list', data: await modelCards(ctx) };
}

export async function retrieveModel(ctx: OpenAIContext, id: string): Promise<ModelCard> {
  const found = (await modelCards(ctx)).find((m) => m.id === id || repositoryModelName(m.id) === repositoryModelName(id));
  if (!found) throw modelNotFound(id);
  return found;
}
