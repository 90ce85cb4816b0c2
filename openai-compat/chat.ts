// POST /v1/chat/completions: the request translated into one chat prompt plus sampling values
// for the input processor, n choices run together, and the answer in OpenAI's
// chat.completion / chat.completion.chunk shapes (role with the first content delta, logprobs
// as content[] entries).

import type { FastifyReply } from 'fastify';
import type { FinishReason } from '../src/contracts/generate.js';
import type { ChatMessage, GenerationEvent } from '../src/contracts/text-generation.js';
import { invalidArg } from '../src/errors.js';
import { readWireParams } from '../src/vocabulary/index.js';
import type { GenerateInput } from '../src/serving/llm-backend.js';
import type { OpenAIContext } from './context.js';
import { prepareChoices, runChoices } from '../src/server/kit/choices.js';
import { chatLogprobs, type ChatTokenLogprob } from './logprobs.js';
import { CHAT_FIELDS, CHAT_VOCABULARY, checkFields, checkNoOps, choiceCount, optionalFlag, streamSettings } from './request-fields.js';
import { requireModel, requireObject, type Body } from '../src/server/kit/body.js';
import { collectChoices, streamChoices } from './respond.js';
import { ChatChunks, chatMessage, toolFinishReason } from './tool-calls.js';
import { keepsSpecialTokens, type ChatToolPlan } from '../src/server/kit/tool-plan.js';
import { chatTools } from './chat-tools.js';
import { responseHead, responseMeta, UsageTally } from './wire.js';
import { PRIORITY_HEADER, priorityOverride, withPriority } from '../src/serving/request-priority.js';

export function chatInput(body: Body, tools: ChatToolPlan = { tools: null, format: null, maxCalls: undefined }, grammarParam = 'tool_choice'): GenerateInput {
  if (body.logprobs !== undefined && body.logprobs !== null && typeof body.logprobs !== 'boolean')
    throw invalidArg('logprobs must be a boolean (use top_logprobs for the number of alternatives)', 'logprobs');
  const kwargs = body.chat_template_kwargs;
  if (kwargs !== undefined && kwargs !== null && (typeof kwargs !== 'object' || Array.isArray(kwargs))) throw invalidArg('chat_template_kwargs must be an object', 'chat_template_kwargs');
  const wire = readWireParams(body, CHAT_VOCABULARY);
  return {
    prompt: {
      kind: 'chat',
      // The input processor checks roles and content parts, naming `messages` in its errors.
      messages: body.messages as readonly ChatMessage[],
      addGenerationPrompt: optionalFlag(body, 'add_generation_prompt', true),
      chatTemplateKwargs: (kwargs ?? null) as Readonly<Record<string, unknown>> | null,
      tools: tools.tools,
    },
    ...wire,
    sampling: { ...wire.sampling, skip_special_tokens: keepsSpecialTokens(tools, wire.sampling.skip_special_tokens) },
    ...(tools.grammar ? { grammar: { spec: tools.grammar, param: grammarParam } } : {}),
  };
}

interface ChatChoice {
  text: string;
  logprobs: ChatTokenLogprob[];
  finishReason: FinishReason | null;
}

export async function chatCompletions(ctx: OpenAIContext, rawBody: unknown, reply: FastifyReply, signal: AbortSignal): Promise<unknown> {
  const body = requireObject(rawBody);
  checkFields(body, CHAT_FIELDS);
  checkNoOps(body);
  const requested = requireModel(body);
  const model = ctx.llm(requested);
  const { stream, includeUsage } = streamSettings(body);
  const n = choiceCount(body);
  const { body: shown, plan: tools, custom, grammarParam } = chatTools(body, model, requested);
  const choices = await prepareChoices(model, chatInput(shown, tools, grammarParam), n);
  // Every choice shares the prompt, so whether it opened a thinking block.
  const reasoning = model.reasoningOf(choices[0]!);
  const wantLogprobs = body.logprobs === true;
  const tokenText = ctx.tokenSpelling(model, body);
  const events = runChoices(model, withPriority(choices, priorityOverride(reply.request.headers[PRIORITY_HEADER])), signal);
  const meta = responseMeta('chatcmpl', requested, model);
  const usage = new UsageTally(n);
  const logprobsOf = (event: GenerationEvent) => (wantLogprobs && event.logprobs ? chatLogprobs(event.logprobs, tokenText) : []);

  if (stream) {
    const chunks = new ChatChunks(tools, n, reasoning, custom);
    await streamChoices(reply, events, {
      meta,
      head: 'chat.completion.chunk',
      includeUsage,
      usage,
      sendTimeoutMs: ctx.options.streamSendTimeoutMs,
      keepAliveMs: ctx.options.sseKeepAliveMs,
      model,
      choice: (index, event) => chunks.entries(index, event, logprobsOf(event)),
    });
    return reply;
  }

  const state: ChatChoice[] = choices.map(() => ({ text: '', logprobs: [], finishReason: null }));
  await collectChoices(events, usage, (index, event) => {
    const choice = state[index]!;
    choice.text += event.text;
    choice.logprobs.push(...logprobsOf(event));
    choice.finishReason = event.finishReason;
  });
  reply.header('x-request-id', meta.id);
  return {
    ...responseHead(meta, 'chat.completion'),
    choices: state.map((c, index) => {
      const { message, calls } = chatMessage(tools, c.text, reasoning, custom);
      return { index, message, logprobs: wantLogprobs ? { content: c.logprobs, refusal: null } : null, finish_reason: toolFinishReason(c.finishReason, calls) };
    }),
    usage: usage.toWire(),
  };
}
