// The Responses API's `input` read into chat messages for the chat template. Input is a string
// (one user message) or a list of items: messages (user, system, developer with input_text
// parts; assistant with output_text or refusal parts), function_call and function_call_output,
// custom_tool_call (as the function a custom tool is offered as) and custom_tool_call_output, reasoning, and item_reference (an item of a stored response, resolved by the caller). A
// function_call joins the assistant turn before it, so parallel calls render as one turn with
// several tool_calls; a reasoning item becomes the next assistant turn's reasoning_content.
// Every rejection names the item at fault (`input[2].content[0].type`).

import type { ChatMessage } from '../../src/contracts/text-generation.js';
import { invalidArg } from '../../src/errors.js';
import { isObject } from '../../src/server/kit/body.js';
import { customCallArguments } from '../custom-tools.js';

export type Item = Readonly<Record<string, unknown>>;

const MESSAGE_ROLES = new Set(['user', 'system', 'developer', 'assistant']);
const INPUT_PART_TYPES = new Set(['input_text', 'output_text', 'text', 'refusal']);

/** `input` as a list of items (a string is one user message); item_reference entries are resolved by `resolve`. */
export function inputItems(input: unknown, resolve: (id: string, at: string) => Item): Item[] {
  if (typeof input === 'string') return [{ type: 'message', role: 'user', content: input }];
  if (!Array.isArray(input) || input.length === 0) throw invalidArg('input must be a string or a non-empty array of input items', 'input');
  return input.map((item: unknown, i) => {
    const at = `input[${i}]`;
    if (!isObject(item)) throw invalidArg(`${at} must be an object`, at);
    if (item.type !== 'item_reference') return item;
    if (typeof item.id !== 'string') throw invalidArg(`${at}.id must be a string`, `${at}.id`);
    return resolve(item.id, at);
  });
}

function text(value: unknown, at: string): string {
  if (typeof value !== 'string') throw invalidArg(`${at} must be a string`, at);
  return value;
}

/** A message's content: a string, or text parts joined. */
function messageText(content: unknown, at: string): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw invalidArg(`${at} must be a string or an array of content parts`, at);
  return content
    .map((part: unknown, j) => {
      const partAt = `${at}[${j}]`;
      if (!isObject(part)) throw invalidArg(`${partAt} must be an object`, partAt);
      if (typeof part.type !== 'string' || !INPUT_PART_TYPES.has(part.type)) {
        throw invalidArg(`${partAt}.type ${JSON.stringify(part.type)} is not supported (this server takes input_text, output_text and refusal parts)`, `${partAt}.type`);
      }
      return part.type === 'refusal' ? text(part.refusal, `${partAt}.refusal`) : text(part.text, `${partAt}.text`);
    })
    .join('');
}

/** A reasoning item's text: its reasoning_text content, else its summary. */
function reasoningText(item: Item, at: string): string {
  const parts = Array.isArray(item.content) && item.content.length > 0 ? item.content : item.summary;
  if (parts === undefined || parts === null) return '';
  if (!Array.isArray(parts)) throw invalidArg(`${at}.summary must be an array`, `${at}.summary`);
  return parts.map((part: unknown, j) => (isObject(part) ? text(part.text, `${at}.content[${j}].text`) : '')).join('\n');
}

/** A function_call_output's output: a string, or text parts. */
function toolOutput(output: unknown, at: string): string {
  if (typeof output === 'string') return output;
  return messageText(output, at);
}

interface AssistantTurn {
  readonly role: 'assistant';
  readonly content: string | null;
  readonly tool_calls: unknown[];
  readonly reasoning_content?: string;
}

class Conversation {
  private readonly messages: ChatMessage[] = [];
  private reasoning: string | null = null;
  /** The assistant turn that function calls still join (nothing came after it). */
  private openAssistant: AssistantTurn | null = null;

  add(message: ChatMessage): void {
    this.messages.push(message);
    this.openAssistant = null;
  }

  assistant(content: string | null): void {
    const turn: AssistantTurn = { role: 'assistant', content, tool_calls: [], ...(this.reasoning !== null ? { reasoning_content: this.reasoning } : {}) };
    this.reasoning = null;
    this.messages.push(turn);
    this.openAssistant = turn;
  }

  call(id: string, name: string, args: string): void {
    if (this.openAssistant === null) this.assistant(null);
    this.openAssistant!.tool_calls.push({ id, type: 'function', function: { name, arguments: args } });
  }

  think(text: string): void {
    this.reasoning = this.reasoning === null ? text : `${this.reasoning}\n${text}`;
  }

  /** Turns without calls carry no tool_calls key, as a chat client would send them. */
  finish(): ChatMessage[] {
    return this.messages.map((m) => (m.role === 'assistant' && m.tool_calls?.length === 0 ? withoutCalls(m) : m));
  }
}

function withoutCalls(message: ChatMessage): ChatMessage {
  const { tool_calls: _, ...rest } = message;
  return rest;
}

/**
 * Items (already resolved) as chat messages; `instructions` first, as the system message. The
 * first `ownFrom` items came from the stored conversation, so errors index the rest as `input[i]`.
 */
export function itemsToMessages(items: readonly Item[], instructions: string | null, ownFrom = 0): ChatMessage[] {
  const conversation = new Conversation();
  if (instructions !== null) conversation.add({ role: 'system', content: instructions });
  items.forEach((item, i) => addItem(conversation, item, i < ownFrom ? 'previous_response_id' : `input[${i - ownFrom}]`));
  const messages = conversation.finish();
  if (messages.length === 0) throw invalidArg('input has no message to answer', 'input');
  return messages;
}

function addItem(conversation: Conversation, item: Item, at: string): void {
  const type = item.type ?? 'message';
  switch (type) {
    case 'message': {
      const role = item.role;
      if (typeof role !== 'string' || !MESSAGE_ROLES.has(role)) throw invalidArg(`${at}.role must be one of ${[...MESSAGE_ROLES].join(', ')}, got ${JSON.stringify(role)}`, `${at}.role`);
      const content = messageText(item.content, `${at}.content`);
      if (role === 'assistant') conversation.assistant(content);
      else conversation.add({ role, content });
      return;
    }
    case 'function_call':
      conversation.call(text(item.call_id, `${at}.call_id`), text(item.name, `${at}.name`), text(item.arguments, `${at}.arguments`));
      return;
    case 'function_call_output':
    case 'custom_tool_call_output':
      conversation.add({ role: 'tool', tool_call_id: text(item.call_id, `${at}.call_id`), content: toolOutput(item.output, `${at}.output`) });
      return;
    case 'custom_tool_call':
      // Shown to the template as the function the custom tool is offered as (tools.ts): one string, input.
      conversation.call(text(item.call_id, `${at}.call_id`), text(item.name, `${at}.name`), customCallArguments(text(item.input, `${at}.input`)));
      return;
    case 'reasoning':
      conversation.think(reasoningText(item, at));
      return;
    default:
      throw invalidArg(
        `${at}.type ${JSON.stringify(type)} is not supported (this server takes message, function_call, function_call_output, custom_tool_call, custom_tool_call_output, reasoning and item_reference items)`,
        `${at}.type`,
      );
  }
}
