// GET /v1/models and /v1/models/{id}: every READY LLM and embedding model, in OpenAI's list
// shape, plus vLLM's `root` and (for LLMs) `max_model_len`, which benchmark tools read, and
// `state`: a loaded model whose workers are restarting after a crash stays listed, UNAVAILABLE.

import type { OpenAIContext } from './context.js';
import { modelNotFound } from './errors.js';

export interface ModelCard {
  readonly id: string;
  readonly object: 'model';
  readonly created: number;
  readonly owned_by: string;
  readonly root: string;
  readonly max_model_len?: number;
  /** READY while it takes requests; UNAVAILABLE while its workers restart or after a crash loop. */
  readonly state: 'READY' | 'UNAVAILABLE';
}

export const OWNER = 'conveyor';

export function modelCards(ctx: OpenAIContext): ModelCard[] {
  const cards = new Map<string, ModelCard>();
  const card = (id: string, extra: { max_model_len?: number } = {}): ModelCard => {
    const state = ctx.service.modelReady(id) ? 'READY' : 'UNAVAILABLE';
    return { id, object: 'model', created: ctx.startedAt, owned_by: OWNER, root: id, ...extra, state };
  };
  for (const model of ctx.service.llmModels()) {
    if (!cards.has(model.name)) cards.set(model.name, card(model.name, { max_model_len: model.processor.info.contextLength }));
  }
  for (const model of ctx.embeddings.list()) if (!cards.has(model.name)) cards.set(model.name, card(model.name));
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
