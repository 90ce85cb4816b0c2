// An Anthropic conversation (`system` plus `messages` of content blocks) as the OpenAI-style chat
// messages the model's chat template renders: the system prompt first; a user turn's text blocks
// joined into one user message, each tool_result block a `tool` message (in block order, so a
// template groups them as the model was trained to see them); an assistant turn's text as its
// content, its tool_use blocks as tool_calls (arguments as JSON text, as the OpenAI route takes
// them) and its thinking blocks as reasoning_content. Every refusal names the block at fault
// the way Anthropic does (`messages.1.content.0.type`).

import type { ChatMessage } from '../src/contracts/text-generation.js';
import { invalidArg } from '../src/errors.js';
import { isObject } from '../src/server/kit/body.js';

type Block = Readonly<Record<string, unknown>>;

/** Blocks a model cannot read in this server: named in the refusal rather than dropped. */
const UNREADABLE = new Set(['image', 'document', 'search_result', 'server_tool_use', 'web_search_tool_result', 'container_upload']);

function requireString(value: unknown, at: string): string {
  if (typeof value !== 'string') throw invalidArg(`${at} must be a string`, at);
  return value;
}

function blocksOf(content: unknown, at: string): readonly Block[] {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  if (!Array.isArray(content)) throw invalidArg(`${at} must be a string or an array of content blocks`, at);
  return content.map((block: unknown, j) => {
    if (!isObject(block) || typeof block.type !== 'string') throw invalidArg(`${at}.${j} must be a content block object with a type`, `${at}.${j}`);
    if (UNREADABLE.has(block.type)) throw invalidArg(`${at}.${j}.type: content blocks of type "${block.type}" are not supported by this server (text only)`, `${at}.${j}.type`);
    return block;
  });
}

/** The system prompt: a string or text blocks (joined by newlines); null when absent or empty. */
export function systemPrompt(system: unknown): string | null {
  if (system === undefined || system === null) return null;
  const text = blocksOf(system, 'system')
    .map((block, j) => {
      if (block.type !== 'text') throw invalidArg(`system.${j}.type must be "text", got ${JSON.stringify(block.type)}`, `system.${j}.type`);
      return requireString(block.text, `system.${j}.text`);
    })
    .join('\n');
  return text === '' ? null : text;
}

function toolResultText(block: Block, at: string): string {
  const content = block.content ?? '';
  const text =
    typeof content === 'string'
      ? content
      : blocksOf(content, `${at}.content`)
          .map((part, k) => {
            if (part.type !== 'text') throw invalidArg(`${at}.content.${k}.type must be "text", got ${JSON.stringify(part.type)}`, `${at}.content.${k}.type`);
            return requireString(part.text, `${at}.content.${k}.text`);
          })
          .join('\n');
  if (block.is_error !== undefined && block.is_error !== null && typeof block.is_error !== 'boolean') throw invalidArg(`${at}.is_error must be a boolean`, `${at}.is_error`);
  // Templates have no error flag for a tool response; the model reads it in the text.
  return block.is_error === true ? `Error: ${text}` : text;
}

function userTurn(blocks: readonly Block[], at: string): ChatMessage[] {
  const out: ChatMessage[] = [];
  let text: string[] = [];
  const flush = (): void => {
    if (text.length > 0) out.push({ role: 'user', content: text.join('\n') });
    text = [];
  };
  blocks.forEach((block, j) => {
    const here = `${at}.${j}`;
    if (block.type === 'text') text.push(requireString(block.text, `${here}.text`));
    else if (block.type === 'tool_result') {
      flush();
      out.push({ role: 'tool', tool_call_id: requireString(block.tool_use_id, `${here}.tool_use_id`), content: toolResultText(block, here) });
    } else throw invalidArg(`${here}.type: a user turn takes text and tool_result blocks, got ${JSON.stringify(block.type)}`, `${here}.type`);
  });
  flush();
  return out;
}

function assistantTurn(blocks: readonly Block[], at: string): ChatMessage {
  const text: string[] = [];
  const reasoning: string[] = [];
  const calls: unknown[] = [];
  blocks.forEach((block, j) => {
    const here = `${at}.${j}`;
    if (block.type === 'text') text.push(requireString(block.text, `${here}.text`));
    else if (block.type === 'thinking') reasoning.push(requireString(block.thinking, `${here}.thinking`));
    else if (block.type === 'redacted_thinking')
      return; // opaque to every model but the one that wrote it
    else if (block.type === 'tool_use') {
      if (!isObject(block.input)) throw invalidArg(`${here}.input must be an object`, `${here}.input`);
      const name = requireString(block.name, `${here}.name`);
      calls.push({ id: requireString(block.id, `${here}.id`), type: 'function', function: { name, arguments: JSON.stringify(block.input) } });
    } else throw invalidArg(`${here}.type: an assistant turn takes text, thinking and tool_use blocks, got ${JSON.stringify(block.type)}`, `${here}.type`);
  });
  return {
    role: 'assistant',
    content: text.join(''),
    ...(calls.length > 0 ? { tool_calls: calls } : {}),
    ...(reasoning.length > 0 ? { reasoning_content: reasoning.join('\n') } : {}),
  };
}

/** The chat messages the template renders for an Anthropic request's system and messages. */
export function chatHistory(system: unknown, messages: unknown): ChatMessage[] {
  if (!Array.isArray(messages) || messages.length === 0) throw invalidArg('messages must be a non-empty array', 'messages');
  const prompt = systemPrompt(system);
  const out: ChatMessage[] = prompt === null ? [] : [{ role: 'system', content: prompt }];
  messages.forEach((message: unknown, i) => {
    const at = `messages.${i}`;
    if (!isObject(message)) throw invalidArg(`${at} must be an object`, at);
    const blocks = blocksOf(message.content, `${at}.content`);
    if (message.role === 'user') out.push(...userTurn(blocks, `${at}.content`));
    else if (message.role === 'assistant') out.push(assistantTurn(blocks, `${at}.content`));
    else throw invalidArg(`${at}.role must be "user" or "assistant", got ${JSON.stringify(message.role)}`, `${at}.role`);
  });
  // A final assistant turn asks Anthropic to continue it (prefill); this server's templates always open a new turn.
  if (isObject(messages.at(-1)) && (messages.at(-1) as Block).role === 'assistant') {
    throw invalidArg(`messages.${messages.length - 1}: a final assistant message (prefill) is not supported; end with a user message`, `messages.${messages.length - 1}.role`);
  }
  return out;
}
