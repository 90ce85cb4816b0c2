// A request's scheduling priority given beside its body: vLLM's `x-vllm-priority` HTTP header,
// read by every HTTP generation route and, as call metadata of the same name, by gRPC Generate.
// It wins over the body's `priority` field, so a proxy can set it without parsing the body (as
// vLLM does). Lower runs first under scheduling_policy priority; ignored under fcfs.

import { invalidArg } from '../errors.js';
import type { ProcessedRequest } from '../contracts/text-generation.js';

/** vLLM's header (and this server's gRPC metadata key) for a request's priority. */
export const PRIORITY_HEADER = 'x-vllm-priority';

/** The priority a header or metadata value gives (an integer, lower first); undefined when absent. */
export function priorityOverride(value: unknown): number | undefined {
  const raw = Array.isArray(value) ? value[0] : value;
  if (raw === undefined || raw === null || raw === '') return undefined;
  const text = typeof raw === 'string' ? raw.trim() : String(raw);
  const priority = Number(text);
  if (!/^[+-]?\d+$/.test(text) || !Number.isSafeInteger(priority)) throw invalidArg(`${PRIORITY_HEADER} must be an integer, got '${text}'`, PRIORITY_HEADER);
  return priority;
}

/** The prepared requests with the override's priority, or unchanged when there is none. */
export function withPriority(prepared: readonly ProcessedRequest[], priority: number | undefined): readonly ProcessedRequest[] {
  if (priority === undefined) return prepared;
  return prepared.map((p) => ({ ...p, request: { ...p.request, priority } }));
}
