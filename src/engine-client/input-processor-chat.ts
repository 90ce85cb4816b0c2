// Chat template rendering with @huggingface/jinja: the model's own template from
// tokenizer_config.json (or chat_template.jinja), fed OpenAI-style messages normalized to what
// templates expect (string content), the tokenizer's special tokens, tools and template kwargs.
// What the template gets is what transformers' apply_chat_template gives it (the parity corpus,
// test/integration/chat-template-parity.test.ts, checks it family by family), with two rules where
// a template would mishandle what OpenAI clients send:
//   - developer: kept where the template renders it; as system where the template drops the
//     message or raises on it (probed once per template, DEVELOPER_PROBE);
//   - content null (an assistant turn with only tool calls): passed as null, which templates
//     test for (DeepSeek V3 writes the calls only for `content is none`); where the template
//     raises on it, rendered again with "" instead (older Qwen3 and Llama 3 templates).

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

/** Text no template writes by itself: the developer probe looks for it in the output. */
const DEVELOPER_PROBE = 'conveyor-developer-probe';

export class ChatTemplate {
  private readonly template: Template;
  /** Whether the template renders a developer message (else it gets it as system); probed on first use. */
  private keepsDeveloper?: boolean;

  constructor(
    source: string,
    private readonly specialTokens: SpecialTokens,
  ) {
    this.template = new Template(source);
  }

  /**
   * `escapeUserText`, when given, rewrites every user-supplied string before rendering: all of the
   * messages (contents, reasoning, names, tool calls and their ids), the tools and the template
   * kwargs, object keys included, since templates render tool schemas and call arguments whole.
   */
  render(messages: unknown, options: ChatTemplateOptions = {}, escapeUserText?: (text: string) => string): string {
    const kwargs = options.chatTemplateKwargs ?? {};
    if (typeof kwargs !== 'object' || Array.isArray(kwargs)) throw invalidArg('chat_template_kwargs must be an object', 'chat_template_kwargs');
    if ('messages' in kwargs) throw invalidArg('chat_template_kwargs cannot set messages', 'chat_template_kwargs');
    const tools = options.tools ?? null;
    if (tools !== null && !Array.isArray(tools)) throw invalidArg('tools must be an array', 'tools');
    const userText = escapeUserText ? (value: unknown) => escapeDeep(value, escapeUserText) : (value: unknown) => value;
    let normalized = normalizeMessages(messages);
    if (!this.rendersDeveloper()) normalized = normalized.map((m) => (m.role === 'developer' ? { ...m, role: 'system' } : m));
    const context: Record<string, unknown> = {
      ...this.specialTokens,
      add_generation_prompt: options.addGenerationPrompt ?? true,
      // Templates test `if tools`: an empty list must read as no tools.
      tools: tools && tools.length > 0 ? userText(tools) : null,
      // As vLLM does, request kwargs may override the defaults above (a kwarg's name is no text the template renders).
      ...Object.fromEntries(Object.entries(kwargs).map(([name, value]) => [name, userText(value)])),
      messages: normalized.map(userText),
    };
    try {
      return this.template.render(context);
    } catch (error) {
      // A template that cannot take null content (`'</think>' in content`, `content | trim`) gets "" for it.
      if (normalized.some((m) => m.content === null)) {
        const emptied = normalized.map((m) => (m.content === null ? { ...m, content: '' } : m));
        try {
          return this.template.render({ ...context, messages: emptied.map(userText) });
        } catch {
          // The template's first refusal says more.
        }
      }
      throw invalidArg(`the chat template rejected the messages: ${error instanceof Error ? error.message : String(error)}`, 'messages');
    }
  }

  /** True when a developer message shows in the prompt; false when the template drops it or raises. */
  private rendersDeveloper(): boolean {
    if (this.keepsDeveloper === undefined) {
      const probe = [
        { role: 'developer', content: DEVELOPER_PROBE },
        { role: 'user', content: 'Hi' },
      ];
      try {
        this.keepsDeveloper = this.template.render({ ...this.specialTokens, add_generation_prompt: true, tools: null, messages: probe }).includes(DEVELOPER_PROBE);
      } catch {
        this.keepsDeveloper = false;
      }
    }
    return this.keepsDeveloper;
  }
}

/**
 * `value` with every string in it, object keys included, passed through `escape`. Deep and
 * whole rather than a list of fields: templates differ in what they render (Qwen's writes
 * `tools` and object arguments with tojson, keys and all; Mistral's writes tool_call_id), and a
 * string with no special-token text comes back unchanged.
 */
function escapeDeep(value: unknown, escape: (text: string) => string): unknown {
  if (typeof value === 'string') return escape(value);
  if (Array.isArray(value)) return value.map((item: unknown) => escapeDeep(item, escape));
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [escape(key), escapeDeep(item, escape)]));
}

/** Total characters of the messages' text (contents and reasoning), counted before any rendering. */
export function messageChars(messages: unknown): number {
  if (!Array.isArray(messages)) return 0;
  let total = 0;
  for (const message of messages as unknown[]) {
    if (typeof message !== 'object' || message === null) continue;
    const { content, reasoning_content: reasoningContent, reasoning } = message as Record<string, unknown>;
    if (typeof reasoningContent === 'string') total += reasoningContent.length;
    else if (typeof reasoning === 'string') total += reasoning.length;
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
    const { role, content, reasoning, ...rest } = message as Record<string, unknown>;
    if (typeof role !== 'string' || !ROLES.has(role)) throw invalidArg(`messages[${i}].role must be one of ${[...ROLES].join(', ')}, got ${JSON.stringify(role)}`, 'messages');
    // Clients send an assistant turn's thinking as reasoning_content or as reasoning; templates read reasoning_content.
    const thinking = rest.reasoning_content ?? reasoning;
    if (thinking !== undefined && thinking !== null && typeof thinking !== 'string') throw invalidArg(`messages[${i}].reasoning_content must be a string`, 'messages');
    // developer stays developer here; ChatTemplate.render makes it system for templates that would drop or refuse it.
    return { ...rest, ...(typeof thinking === 'string' ? { reasoning_content: thinking } : {}), role, content: contentText(content, i) };
  });
}

/** The content as a string; null (or absent) stays null, as transformers passes None to the template. */
function contentText(content: unknown, i: number): string | null {
  if (content === undefined || content === null) return null;
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
