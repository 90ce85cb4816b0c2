// What every Messages route needs: the service, the front end's options, and the model lookup
// (an unknown model is 404 not_found_error; one serving another purpose a 400).

import { repositoryModelName } from '../src/contracts/model-names.js';
import type { ConveyorService } from '../src/serving/conveyor-service.js';
import type { LlmModel } from '../src/serving/llm-backend.js';
import { invalidArg } from '../src/errors.js';
import { missingModel } from '../src/server/kit/errors.js';

export interface AnthropicOptions {
  /** An SSE client that reads nothing this long while output waits is dropped (default: the limits table's). */
  readonly streamSendTimeoutMs?: number;
  /** An SSE stream silent this long gets a keep-alive comment (default: the limits table's; 0: none). */
  readonly sseKeepAliveMs?: number;
}

export class AnthropicContext {
  constructor(
    readonly service: ConveyorService,
    readonly options: AnthropicOptions,
  ) {}

  /** The LLM a request's `model` names (its highest READY version). */
  llm(name: string): LlmModel {
    if (this.service.llmModels().some((m) => m.name === repositoryModelName(name))) return this.service.llmModel(name);
    if (this.service.modelReady(name)) throw invalidArg(`model '${name}' is not a text generation model`, 'model');
    throw missingModel(this.service, name);
  }
}
