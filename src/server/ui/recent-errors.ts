// The last few refused or failed HTTP requests, for the dashboard's "recent errors" panel. Kept in
// a small ring on the main thread (no I/O): the dashboard reads it through GET /ui/api/status,
// which is in the 'api' class, so a server with keys shows it only to a caller holding one.

import type { FastifyInstance } from 'fastify';
import type { RecentError } from '../../contracts/ui-status.js';

const DEFAULT_CAPACITY = 50;
const MESSAGE_CHARS = 300;

export class RecentErrors {
  private readonly entries: RecentError[] = [];

  constructor(private readonly capacity = DEFAULT_CAPACITY) {}

  record(entry: RecentError): void {
    this.entries.push(entry);
    if (this.entries.length > this.capacity) this.entries.shift();
  }

  /** Newest first. */
  list(): readonly RecentError[] {
    return [...this.entries].reverse();
  }
}

/** The human message of an error body in any of the front ends' shapes (KServe, OpenAI, Anthropic). */
export function errorMessageOf(payload: unknown): string {
  if (typeof payload !== 'string' && !Buffer.isBuffer(payload)) return '';
  const text = payload.toString().slice(0, 4096);
  try {
    const body = JSON.parse(text) as { error?: unknown };
    const error = body.error;
    if (typeof error === 'string') return error.slice(0, MESSAGE_CHARS);
    if (error !== null && typeof error === 'object' && 'message' in error && typeof error.message === 'string') return error.message.slice(0, MESSAGE_CHARS);
  } catch {
    // Not JSON: the raw text (a proxy's page, a plain-text refusal).
  }
  return text.slice(0, MESSAGE_CHARS);
}

/**
 * Records every answer of status 400 or above on `app`. A root hook, so call it before anything
 * is registered (as installAccessControl is): fastify adds root hooks only to later plugins.
 */
export function installRecentErrors(app: FastifyInstance, errors: RecentErrors): void {
  app.addHook('onSend', async (request, reply, payload) => {
    if (reply.statusCode >= 400) {
      errors.record({ time_ms: Date.now(), method: request.method, path: request.url.split('?')[0]!, status: reply.statusCode, message: errorMessageOf(payload) });
    }
    return payload;
  });
}
