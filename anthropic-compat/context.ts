// What every Messages route needs: the service, the front end's options, the load shedding it
// shares with the OpenAI routes (one bound per model, whichever API a request came through),
// and the model lookup (an unknown model is 404 not_found_error; one serving another purpose a 400).

import { repositoryModelName } from '../src/contracts/model-names.js';
import type { ConveyorService } from '../src/serving/conveyor-service.js';
import type { LlmModel } from '../src/serving/llm-backend.js';
import { invalidArg } from '../src/errors.js';
import type { Admission } from '../openai-compat/admission.js';
import { missingModel } from '../openai-compat/errors.js';

export interface AnthropicOptions {
  /** The OpenAI routes' admission, so both APIs count against one --max-queued-requests. */
  readonly admission: Admission;
  /** An SSE client that reads nothing this long while output waits is dropped (default: the limits table's). */
  readonly streamSendTimeoutMs?: number;
}

export class AnthropicContext {
  constructor(
    readonly service: ConveyorService,
    readonly options: AnthropicOptions,
  ) {}

  get admission(): Admission {
    return this.options.admission;
  }

  /** The LLM a request's `model` names (its highest READY version). */
  llm(name: string): LlmModel {
    if (this.service.llmModels().some((m) => m.name === repositoryModelName(name))) return this.service.llmModel(name);
    if (this.service.modelReady(name)) throw invalidArg(`model '${name}' is not a text generation model`, 'model');
    throw missingModel(this.service, name);
  }
}
