// The stored responses (store: true) and the routes that read them: GET /v1/responses/{id},
// GET /v1/responses/{id}/input_items, DELETE /v1/responses/{id} and POST
// /v1/responses/{id}/cancel (background.ts runs the cancellable ones). Each entry keeps the response object, its own input items (ids
// assigned where the client sent none, as input_items lists them) and the whole conversation
// before its output, which a previous_response_id follow-up continues. The entries live in a
// bounded ExpiringStore (--responses-store-size, --responses-store-ttl-secs).

import { invalidArg } from '../../src/errors.js';
import { OpenAIRequestError } from '../errors.js';
import type { Item } from './input-items.js';
import { newItemId, type WireObject } from './output-events.js';
import { ExpiringStore, type StoreOptions } from './store.js';

export interface StoredResponse {
  readonly response: WireObject;
  /** This response's own input items. */
  readonly input: readonly Item[];
  /** Every item before this response's output (earlier turns included). */
  readonly history: readonly Item[];
}

const ID_PREFIX: Readonly<Record<string, string>> = { message: 'msg', function_call: 'fc', function_call_output: 'fco', reasoning: 'rs' };

function withId(item: Item): Item {
  if (typeof item.id === 'string') return item;
  const type = typeof item.type === 'string' ? item.type : 'message';
  return { id: newItemId(ID_PREFIX[type] ?? 'item'), type, ...item };
}

export function responseNotFound(id: string): OpenAIRequestError {
  return new OpenAIRequestError('NOT_FOUND', `Response with id '${id}' not found.`, undefined, null);
}

export class ResponseStore {
  private readonly entries: ExpiringStore<StoredResponse>;
  /** Background responses still generating: each one's cancel. */
  private readonly running = new Map<string, () => Promise<WireObject>>();

  constructor(options: StoreOptions) {
    this.entries = new ExpiringStore(options);
  }

  set(entry: StoredResponse): void {
    const input = entry.input.map(withId);
    const own = entry.history.length - entry.input.length;
    this.entries.set(entry.response.id as string, { response: entry.response, input, history: [...entry.history.slice(0, own), ...input] });
  }

  get(id: string): StoredResponse | undefined {
    return this.entries.get(id);
  }

  delete(id: string): boolean {
    return this.entries.delete(id);
  }

  /** An input or output item of a stored response, for item_reference. */
  item(id: string): Item | undefined {
    for (const entry of this.entries.values()) {
      const found = [...entry.input, ...(entry.response.output as Item[])].find((item) => item.id === id);
      if (found !== undefined) return found;
    }
    return undefined;
  }

  /** GET /v1/responses/{id} */
  retrieve(id: string): WireObject {
    const entry = this.get(id);
    if (entry === undefined) throw responseNotFound(id);
    return entry.response;
  }

  /** DELETE /v1/responses/{id} */
  remove(id: string): WireObject {
    if (!this.delete(id)) throw responseNotFound(id);
    return { id, object: 'response', deleted: true };
  }

  track(id: string, cancel: () => Promise<WireObject>): void {
    this.running.set(id, cancel);
  }

  untrack(id: string): void {
    this.running.delete(id);
  }

  /**
   * POST /v1/responses/{id}/cancel: a running background response is aborted and answered
   * cancelled; a finished background one is answered as it stands; others were never cancellable.
   */
  async cancel(id: string): Promise<WireObject> {
    const running = this.running.get(id);
    if (running !== undefined) return running();
    const response = this.retrieve(id);
    if (response.background === true) return response;
    throw new OpenAIRequestError('INVALID_ARG', 'Cannot cancel a synchronous response.', undefined, null);
  }

  /** GET /v1/responses/{id}/input_items, with OpenAI's list paging (order desc by default, limit 1–100, after). */
  inputItems(id: string, query: Readonly<Record<string, unknown>>): WireObject {
    const entry = this.get(id);
    if (entry === undefined) throw responseNotFound(id);
    const order = query.order ?? 'desc';
    if (order !== 'asc' && order !== 'desc') throw invalidArg('order must be "asc" or "desc"', 'order');
    const limit = query.limit === undefined ? 20 : Number(query.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw invalidArg('limit must be an integer in [1, 100]', 'limit');
    let items = order === 'asc' ? [...entry.input] : [...entry.input].reverse();
    if (typeof query.after === 'string') {
      const at = items.findIndex((item) => item.id === query.after);
      if (at < 0) throw invalidArg(`after: no input item with id '${query.after}'`, 'after');
      items = items.slice(at + 1);
    }
    const data = items.slice(0, limit);
    return { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: items.length > limit };
  }
}
