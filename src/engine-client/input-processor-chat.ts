// Chat template rendering with @huggingface/jinja: the model's own template from
// tokenizer_config.json (or chat_template.jinja), fed OpenAI-style messages normalized to what
// templates expect (string content), the tokenizer's special tokens, tools and template kwargs.

import { Template } from '@huggingface/jinja';
import { invalidArg } from '../errors.js';
import type { ChatContentPart, ChatTemplateOptions } from '../contracts/text-generation.js';
import type { ModelFiles, SpecialTokens } from '../tokenizer/model-files.js';

const ROLES = new Set(['system', 'developer', 'user', 'assistant', 'tool']);

/** The template source to use: chat_template.jinja first, else tokenizer_config's (named: "tool_use" with tools, else "default"). */
export function selectChatTemplate(files: Pick<ModelFiles, 'chatTemplateFile' | 'tokenizerConfig'>, withTools: boolean): string | null {
  if (files.chatTemplateFile !== null) return files.chatTemplateFile;
  const field = files.tokenizerConfig.chat_template;
  if (typeof field === 'string') return field;
  if (!Array.isArray(field) || field.length === 0) return null;
  const named = (name: string): string | undefined => field.find((t) => t.name === name)?.template;
  return (withTools ? named('tool_use') : undefined) ?? named('default') ?? field[0]!.template;
}

export class ChatTemplate {
  private readonly template: Template;

  constructor(
    source: string,
    private readonly specialTokens: SpecialTokens,
  ) {
    this.template = new Template(source);
  }

  /** `escapeUserText`, when given, rewrites every user-supplied string of the messages (contents, reasoning, names) before rendering. */
  render(messages: unknown, options: ChatTemplateOptions = {}, escapeUserText?: (text: string) => string): string {
    const kwargs = options.chatTemplateKwargs ?? {};
    if (typeof kwargs !== 'object' || Array.isArray(kwargs)) throw invalidArg('chat_template_kwargs must be an object', 'chat_template_kwargs');
    if ('messages' in kwargs) throw invalidArg('chat_template_kwargs cannot set messages', 'chat_template_kwargs');
    const tools = options.tools ?? null;
    if (tools !== null && !Array.isArray(tools)) throw invalidArg('tools must be an array', 'tools');
    const context: Record<string, unknown> = {
      ...this.specialTokens,
      add_generation_prompt: options.addGenerationPrompt ?? true,
      // Templates test `if tools`: an empty list must read as no tools.
      tools: tools && tools.length > 0 ? tools : null,
      // As vLLM does, request kwargs may override the defaults above.
      ...kwargs,
      messages: escapeUserText ? normalizeMessages(messages).map((m) => escapeMessage(m, escapeUserText)) : normalizeMessages(messages),
    };
    try {
      return this.template.render(context);
    } catch (error) {
      throw invalidArg(`the chat template rejected the messages: ${error instanceof Error ? error.message : String(error)}`, 'messages');
    }
  }
}

const USER_TEXT_FIELDS = ['content', 'reasoning_content', 'name'] as const;

function escapeMessage(message: Record<string, unknown>, escape: (text: string) => string): Record<string, unknown> {
  const out = { ...message };
  for (const field of USER_TEXT_FIELDS) {
    const value = out[field];
    if (typeof value === 'string') out[field] = escape(value);
  }
  return out;
}

/** Total characters of the messages' text (contents and reasoning), counted before any rendering. */
export function messageChars(messages: unknown): number {
  if (!Array.isArray(messages)) return 0;
  let total = 0;
  for (const message of messages as unknown[]) {
    if (typeof message !== 'object' || message === null) continue;
    const { content, reasoning_content: reasoning } = message as Record<string, unknown>;
    if (typeof reasoning === 'string') total += reasoning.length;
    if (typeof content === 'string') total += content.length;
    else if (Array.isArray(content)) for (const part of content as unknown[]) total += typeof (part as ChatContentPart | null)?.text === 'string' ? (part as ChatContentPart).text!.length : 0;
  }
  return total;
}

/** Validates OpenAI-style messages and reduces content to the strings templates index into. */
export function normalizeMessages(messages: unknown): Record<string, unknown>[] {
  if (!Array.isArray(messages) || messages.length === 0) throw invalidArg('messages must be a non-empty array', 'messages');
  return messages.map((message: unknown, i) => {
    if (typeof message !== 'object' || message === null || Array.isArray(message)) throw invalidArg(`messages[${i}] must be an object`, 'messages');
    const { role, content, ...rest } = message as Record<string, unknown>;
    if (typeof role !== 'string' || !ROLES.has(role)) throw invalidArg(`messages[${i}].role must be one of ${[...ROLES].join(', ')}, got ${JSON.stringify(role)}`, 'messages');
    // OpenAI's developer role replaces system for newer models; templates only know system.
    return { ...rest, role: role === 'developer' ? 'system' : role, content: contentText(content, i) };
  });
}

function contentText(content: unknown, i: number): string {
  if (content === undefined || content === null) return '';
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw invalidArg(`messages[${i}].content must be a string or an array of content parts`, 'messages');
  return content
    .map((part: unknown, j) => {
      const p = part as ChatContentPart | null;
      if (typeof p !== 'object' || p === null) throw invalidArg(`messages[${i}].content[${j}] must be an object`, 'messages');
      if (p.type !== 'text') throw invalidArg(`messages[${i}].content[${j}]: content type ${JSON.stringify(p.type)} is not supported (text only)`, 'messages');
      if (typeof p.text !== 'string') throw invalidArg(`messages[${i}].content[${j}].text must be a string`, 'messages');
      return p.text;
    })
    .join('\n');
}
