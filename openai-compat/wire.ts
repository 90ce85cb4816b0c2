// The parts every OpenAI response and stream chunk shares: the id (chatcmpl-/cmpl- plus random
// hex, one per request and identical in every chunk), `created` in Unix seconds, the model as
// the client named it, a system_fingerprint that changes when the serving configuration does,
// and the usage object with prefix-cache hits as prompt_tokens_details.cached_tokens.

import { createHash, randomBytes } from 'node:crypto';
import type { Usage } from '../src/contracts/text-generation.js';
import type { LlmModel } from '../src/serving/llm-backend.js';
import { SERVER_VERSION } from '../src/serving/conveyor-service.js';

export interface ResponseMeta {
  readonly id: string;
  readonly created: number;
  readonly model: string;
  readonly system_fingerprint: string;
}

export interface WireUsage {
  readonly prompt_tokens: number;
  readonly completion_tokens: number;
  readonly total_tokens: number;
  readonly prompt_tokens_details: { readonly cached_tokens: number };
  /** Only for a model with a reasoning parser: the completion tokens spent inside thinking blocks. */
  readonly completion_tokens_details?: { readonly reasoning_tokens: number };
}

const fingerprints = new WeakMap<LlmModel, string>();

/** Stable for one loaded model version and server build: what OpenAI means by a backend configuration. */
export function systemFingerprint(model: LlmModel): string {
  let fp = fingerprints.get(model);
  if (fp === undefined) {
    const identity = JSON.stringify({ name: model.name, version: model.version, server: SERVER_VERSION, parameters: model.config.parameters });
    fp = `fp_${createHash('sha256').update(identity).digest('hex').slice(0, 10)}`;
    fingerprints.set(model, fp);
  }
  return fp;
}

export function responseMeta(prefix: 'chatcmpl' | 'cmpl', requestedModel: string, model: LlmModel): ResponseMeta {
  return {
    id: `${prefix}-${randomBytes(16).toString('hex')}`,
    created: Math.floor(Date.now() / 1000),
    model: requestedModel,
    system_fingerprint: systemFingerprint(model),
  };
}

/** The leading fields of a response or chunk, in OpenAI's order. */
export function responseHead(meta: ResponseMeta, object: string) {
  return { id: meta.id, object, created: meta.created, model: meta.model, system_fingerprint: meta.system_fingerprint };
}

/**
 * Usage over every choice: completion tokens add up; the prompt counts once per distinct prompt
 * (choice index ÷ n), with its cached tokens taken from that prompt's lowest-index choice.
 */
export class UsageTally {
  private readonly finals = new Map<number, Usage>();

  constructor(private readonly n: number) {}

  record(index: number, usage: Usage): void {
    this.finals.set(index, usage);
  }

  toWire(): WireUsage {
    let prompt = 0;
    let completion = 0;
    let cached = 0;
    let reasoning: number | undefined;
    const seenPrompts = new Set<number>();
    for (const [index, usage] of [...this.finals.entries()].sort((a, b) => a[0] - b[0])) {
      completion += usage.completionTokens;
      if (usage.reasoningTokens !== undefined) reasoning = (reasoning ?? 0) + usage.reasoningTokens;
      const group = Math.floor(index / this.n);
      if (seenPrompts.has(group)) continue;
      seenPrompts.add(group);
      prompt += usage.promptTokens;
      cached += usage.cachedTokens;
    }
    const details = reasoning === undefined ? {} : { completion_tokens_details: { reasoning_tokens: reasoning } };
    return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion, prompt_tokens_details: { cached_tokens: cached }, ...details };
  }
}
