// vLLM's POST /tokenize and POST /detokenize for the LLMs: a text prompt (or chat messages, run
// through the model's chat template exactly as /v1/chat/completions would) to token ids, and
// token ids back to text. Benchmarks use them to count tokens the way the server does.

import type { ChatMessage, PromptInput } from '../src/contracts/text-generation.js';
import { invalidArg } from '../src/errors.js';
import { validateTokenIds } from '../src/vocabulary/sampling-params.js';
import type { OpenAIContext } from './context.js';
import { unknownParameter, unsupportedParameter } from './errors.js';
import { optionalFlag } from './request-fields.js';
import { requireObject, type Body } from '../src/server/kit/body.js';

const TOKENIZE_FIELDS = new Set(['model', 'prompt', 'messages', 'add_special_tokens', 'add_generation_prompt', 'chat_template_kwargs', 'return_token_strs', 'continue_final_message']);
const DETOKENIZE_FIELDS = new Set(['model', 'tokens']);

function onlyFields(body: Body, allowed: ReadonlySet<string>): void {
  for (const key of Object.keys(body)) if (!allowed.has(key)) throw unknownParameter(key);
}

function tokenizePrompt(body: Body): PromptInput {
  if (body.messages !== undefined) {
    if (body.prompt !== undefined) throw invalidArg('send either prompt or messages, not both', 'messages');
    if (body.continue_final_message === true) throw unsupportedParameter('continue_final_message');
    // vLLM adds no special tokens to a chat prompt by default: the template writes them.
    if (optionalFlag(body, 'add_special_tokens', false)) throw unsupportedParameter('add_special_tokens', 'is not supported with messages (the chat template writes the special tokens)');
    const kwargs = body.chat_template_kwargs;
    if (kwargs !== undefined && kwargs !== null && (typeof kwargs !== 'object' || Array.isArray(kwargs))) throw invalidArg('chat_template_kwargs must be an object', 'chat_template_kwargs');
    return {
      kind: 'chat',
      messages: body.messages as readonly ChatMessage[],
      addGenerationPrompt: optionalFlag(body, 'add_generation_prompt', true),
      chatTemplateKwargs: (kwargs ?? null) as Readonly<Record<string, unknown>> | null,
    };
  }
  if (typeof body.prompt !== 'string') throw invalidArg('prompt must be a string (or send messages)', 'prompt');
  return { kind: 'text', text: body.prompt, addSpecialTokens: optionalFlag(body, 'add_special_tokens', true) };
}

export async function tokenize(ctx: OpenAIContext, rawBody: unknown): Promise<unknown> {
  const body = requireObject(rawBody);
  onlyFields(body, TOKENIZE_FIELDS);
  const model = ctx.llmOrOnly(body.model);
  const { tokenIds } = await model.processor.tokenizeAsync(tokenizePrompt(body));
  const tokenizer = model.processor.tokenizer;
  return {
    count: tokenIds.length,
    max_model_len: model.processor.info.contextLength,
    tokens: tokenIds,
    token_strs: optionalFlag(body, 'return_token_strs', false) ? tokenIds.map((id) => tokenizer.id_to_token(id) ?? '') : null,
  };
}

export function detokenize(ctx: OpenAIContext, rawBody: unknown): unknown {
  const body = requireObject(rawBody);
  onlyFields(body, DETOKENIZE_FIELDS);
  const model = ctx.llmOrOnly(body.model);
  if (!Array.isArray(body.tokens)) throw invalidArg('tokens must be an array of token ids', 'tokens');
  const ids = validateTokenIds(body.tokens, 'tokens', model.processor.info.vocabSize);
  return { prompt: model.processor.tokenizer.decode(ids, { skip_special_tokens: false }) };
}
