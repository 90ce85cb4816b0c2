// POST /v1/messages/count_tokens: the prompt a Messages request would run, rendered by the same
// chat template with the same tools and thinking switch, and counted by the model's tokenizer.

import type { AnthropicContext } from './context.js';
import { checkFields, COUNT_TOKENS_FIELDS, messagesPrompt, MODEL_REQUIRED } from './request.js';
import { requireModel, requireObject } from '../src/server/kit/body.js';
import { messagesToolPlan } from './tools.js';

export async function countTokens(ctx: AnthropicContext, rawBody: unknown): Promise<{ input_tokens: number }> {
  const body = requireObject(rawBody);
  checkFields(body, COUNT_TOKENS_FIELDS);
  const model = ctx.llm(requireModel(body, MODEL_REQUIRED));
  const prompt = messagesPrompt(body, messagesToolPlan(body, model));
  const { tokenIds } = await model.processor.tokenizeAsync(prompt);
  return { input_tokens: tokenIds.length };
}
