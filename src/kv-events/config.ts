// The kv_events_config model parameter: vLLM's --kv-events-config JSON, field for field
// (enable_kv_cache_events, publisher, endpoint, replay_endpoint, buffer_steps, hwm,
// max_queue_size, topic), with vLLM's defaults. Off unless enable_kv_cache_events is true.
// Pure: the caller supplies the default topic (kv@<host>:<port>@<model>), since only it knows
// the model's name and the serving address.

import type { KvEventsConfig } from '../contracts/kv-events.js';

export const DEFAULT_KV_EVENTS_ENDPOINT = 'tcp://*:5557';

const FIELDS = ['enable_kv_cache_events', 'publisher', 'endpoint', 'replay_endpoint', 'buffer_steps', 'hwm', 'max_queue_size', 'topic'] as const;

export class KvEventsConfigError extends Error {}

/** The topic consumers such as llm-d's KV indexer key a pod's events by. */
export function defaultKvEventsTopic(host: string, port: number, model: string): string {
  return `kv@${host}:${port}@${model}`;
}

/** The publisher's settings, or null when events are off (no JSON, or not enabled, or publisher "null"). */
export function parseKvEventsConfig(json: string | undefined, defaultTopic: string): KvEventsConfig | null {
  if (json === undefined || json.trim() === '') return null;
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch (error) {
    throw new KvEventsConfigError(`kv_events_config is not JSON: ${(error as Error).message}`);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new KvEventsConfigError('kv_events_config must be a JSON object');
  const fields = raw as Record<string, unknown>;
  const unknown = Object.keys(fields).filter((k) => !(FIELDS as readonly string[]).includes(k));
  if (unknown.length > 0) throw new KvEventsConfigError(`kv_events_config: unknown field ${unknown.map((k) => `'${k}'`).join(', ')} (known: ${FIELDS.join(', ')})`);
  const enabled = optional(fields, 'enable_kv_cache_events', 'boolean') ?? false;
  // As vLLM: enabling without naming a publisher means ZeroMQ.
  const publisher = optional(fields, 'publisher', 'string') ?? (enabled ? 'zmq' : 'null');
  if (publisher !== 'zmq' && publisher !== 'null') throw new KvEventsConfigError(`kv_events_config: publisher must be "zmq" or "null", got '${publisher}'`);
  if (!enabled || publisher === 'null') return null;
  const replay = fields.replay_endpoint === null ? null : (optional(fields, 'replay_endpoint', 'string') ?? null);
  return {
    endpoint: nonEmpty(optional(fields, 'endpoint', 'string') ?? DEFAULT_KV_EVENTS_ENDPOINT, 'endpoint'),
    replayEndpoint: replay === null ? null : nonEmpty(replay, 'replay_endpoint'),
    bufferSteps: positiveInt(fields, 'buffer_steps', 10_000),
    hwm: positiveInt(fields, 'hwm', 100_000),
    maxQueueSize: positiveInt(fields, 'max_queue_size', 100_000),
    // vLLM's default topic is empty; an empty topic here means "the model's own", so that each
    // engine of a server with several models publishes under a topic that names it.
    topic: optional(fields, 'topic', 'string') || defaultTopic,
  };
}

function optional<T extends 'string' | 'boolean'>(fields: Record<string, unknown>, key: string, type: T): (T extends 'string' ? string : boolean) | undefined {
  const value = fields[key];
  if (value === undefined) return undefined;
  if (typeof value !== type) throw new KvEventsConfigError(`kv_events_config: ${key} must be a ${type}, got ${JSON.stringify(value)}`);
  return value as T extends 'string' ? string : boolean;
}

function positiveInt(fields: Record<string, unknown>, key: string, fallback: number): number {
  const value = fields[key];
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) throw new KvEventsConfigError(`kv_events_config: ${key} must be a positive integer, got ${JSON.stringify(value)}`);
  return value;
}

function nonEmpty(value: string, key: string): string {
  if (value.trim() === '') throw new KvEventsConfigError(`kv_events_config: ${key} must not be empty`);
  return value;
}
