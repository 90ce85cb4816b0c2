// What every OpenAI route needs: the service, the front end's options, and the model lookups
// with OpenAI's semantics (an unknown id is 404 model_not_found; a model that exists but serves
// another purpose is a 400 naming `model`).

import { repositoryModelName } from '../src/contracts/model-names.js';
import type { ConveyorService } from '../src/serving/conveyor-service.js';
import type { LlmModel } from '../src/serving/llm-backend.js';
import { invalidArg } from '../src/errors.js';
import { EmbeddingModels } from './embedding-models.js';
import { missingModel } from '../src/server/kit/errors.js';
import { TOKEN_ID_SPELLING, TokenText, type TokenSpelling } from './logprobs.js';
import { optionalFlag } from './request-fields.js';
import type { Body } from '../src/server/kit/body.js';

export interface OpenAIOptions {
  /** Origins allowed by CORS ('*' for any); empty: no CORS headers at all. */
  readonly corsAllowOrigins: readonly string[];
  /** The model repository root: embedding models' tokenizer.json sits in their version directories. */
  readonly modelRepository: string;
  /** Largest JSON body in bytes (default: the limits table's --json-max-body-bytes). */
  readonly jsonMaxBodyBytes?: number;
  /** Deepest JSON nesting (default: the limits table's --json-max-depth). */
  readonly jsonMaxDepth?: number;
  /** An SSE client that reads nothing this long while output waits is dropped (default: the limits table's). */
  readonly streamSendTimeoutMs?: number;
  /** An SSE stream silent this long gets a keep-alive comment (default: the limits table's; 0: none). */
  readonly sseKeepAliveMs?: number;
  /** /v1/responses store: most responses kept, and for how long (default: the limits table's). */
  readonly responsesStoreSize?: number;
  readonly responsesStoreTtlSecs?: number;
}

export class OpenAIContext {
  readonly embeddings: EmbeddingModels;
  /** `created` for the model list: when this front end came up (load times are not tracked). */
  readonly startedAt = Math.floor(Date.now() / 1000);
  private readonly tokenTexts = new WeakMap<LlmModel, TokenText>();

  constructor(
    readonly service: ConveyorService,
    readonly options: OpenAIOptions,
  ) {
    this.embeddings = new EmbeddingModels(service, options.modelRepository);
  }

  /** The LLM an OpenAI `model` names (its highest READY version). */
  llm(name: string): LlmModel {
    if (this.service.llmModels().some((m) => m.name === repositoryModelName(name))) return this.service.llmModel(name);
    if (this.service.modelReady(name)) throw invalidArg(`model '${name}' is not a text generation model; use it with the endpoint that serves it`, 'model');
    throw missingModel(this.service, name);
  }

  /** The LLM named, or the only one served when no name is given (vLLM's /tokenize convention). */
  llmOrOnly(name: unknown): LlmModel {
    if (typeof name === 'string' && name.length > 0) return this.llm(name);
    if (name !== undefined && name !== null) throw invalidArg('model must be a non-empty string', 'model');
    const names = [...new Set(this.service.llmModels().map((m) => m.name))];
    if (names.length !== 1) throw invalidArg(`model is required when ${names.length} generation models are served`, 'model');
    return this.service.llmModel(names[0]!);
  }

  /** How a request's logprobs spell tokens: their text, or `token_id:<id>` under vLLM's return_tokens_as_token_ids. */
  tokenSpelling(model: LlmModel, body: Body): TokenSpelling {
    return optionalFlag(body, 'return_tokens_as_token_ids', false) ? TOKEN_ID_SPELLING : this.tokenText(model);
  }

  tokenText(model: LlmModel): TokenText {
    let text = this.tokenTexts.get(model);
    if (text === undefined) {
      text = new TokenText(model.processor.tokenizer);
      this.tokenTexts.set(model, text);
    }
    return text;
  }
}
