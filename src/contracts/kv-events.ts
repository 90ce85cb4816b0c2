// The KV events publisher's settings, as plain data that travels to an engine worker. The
// names and defaults are vLLM's KVEventsConfig (--kv-events-config); src/kv-events parses them.

export interface KvEventsConfig {
  /** A PUB endpoint: bound when it has a wildcard host or is ipc:// or inproc://, connected otherwise. */
  readonly endpoint: string;
  /** A ROUTER endpoint (always bound) answering replay requests; null: no replay. */
  readonly replayEndpoint: string | null;
  /** Batches kept for replay. */
  readonly bufferSteps: number;
  /** The PUB socket's send high-water mark (messages). */
  readonly hwm: number;
  /** Batches waiting to be sent before new ones skip the PUB socket (they stay replayable). */
  readonly maxQueueSize: number;
  /** The first frame of every message. */
  readonly topic: string;
}
