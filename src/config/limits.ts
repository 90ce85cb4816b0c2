// Every resource limit the server enforces, declared once: the option parser, the USAGE text and
// the README read this table, and the front ends receive the parsed values as one ResourceLimits
// object. A limit with `zeroMeans` accepts 0 for that meaning; the others must be positive.

export interface LimitSpec {
  readonly flag: string;
  readonly default: number;
  /** What the number counts, for USAGE ("secs", "bytes", ...). */
  readonly unit: string;
  readonly help: string;
  /** What 0 means, where 0 is allowed (e.g. "unbounded", "off"). */
  readonly zeroMeans?: string;
  /** The largest value accepted, where there is one. */
  readonly max?: number;
}

const MiB = 1024 * 1024;

export const LIMITS = {
  httpHeaderTimeoutSecs: { flag: '--http-header-timeout-secs', default: 30, unit: 'secs', help: 'time a client has to send the request line and headers (slow-loris guard)' },
  httpRequestTimeoutSecs: { flag: '--http-request-timeout-secs', default: 120, unit: 'secs', help: 'time a client has to send a whole request, body included' },
  httpIdleTimeoutSecs: { flag: '--http-idle-timeout-secs', default: 72, unit: 'secs', help: 'an idle keep-alive connection is closed after this long' },
  httpMaxConnections: {
    flag: '--http-max-connections',
    default: 2048,
    unit: 'count',
    help: 'open HTTP connections (WebSockets included); past it a new connection may only ask for a health probe, anything else is answered 503 and closed',
    zeroMeans: 'unbounded',
  },
  httpMaxConnectionsPerIp: {
    flag: '--http-max-connections-per-ip',
    default: 256,
    unit: 'count',
    help: "open HTTP connections from one client address, loopback included (behind a proxy all clients share the proxy's address: raise it or set 0); past it as past --http-max-connections",
    zeroMeans: 'off',
  },
  httpMaxBodyBytes: { flag: '--http-max-body-bytes', default: 256 * MiB, unit: 'bytes', help: 'largest KServe request body, measured after gzip/deflate decoding' },
  jsonMaxBodyBytes: { flag: '--json-max-body-bytes', default: 8 * MiB, unit: 'bytes', help: 'largest OpenAI / tokenize JSON request body' },
  httpLingerBytes: {
    flag: '--http-linger-bytes',
    default: 64 * MiB,
    unit: 'bytes',
    help: "after a request is refused before its body is all read (413), the most of the rest read and discarded before the connection closes, so a client still sending reads the answer, not a reset (nginx's lingering close)",
    zeroMeans: 'close at once',
  },
  httpLingerSecs: {
    flag: '--http-linger-secs',
    default: 10,
    unit: 'secs',
    help: 'the longest a refused client is given to finish sending its body before the connection is closed',
    zeroMeans: 'close at once',
  },
  offthreadJsonBytes: {
    flag: '--offthread-json-bytes',
    default: 1 * MiB,
    unit: 'bytes',
    help: 'a KServe infer JSON body or WebSocket message this large or larger is parsed (JSON numbers into tensors included) on a parse worker thread, not the serving thread',
    zeroMeans: 'every body parsed on the serving thread',
  },
  jsonMaxDepth: { flag: '--json-max-depth', default: 64, unit: 'levels', help: 'deepest nesting of arrays and objects in a JSON body or WebSocket message' },
  maxPromptChars: { flag: '--max-prompt-chars', default: 0, unit: 'chars', help: 'longest prompt text, checked before tokenizing', zeroMeans: '16 x the model context length' },
  maxRequestSecs: { flag: '--max-request-secs', default: 0, unit: 'secs', help: 'a generation running longer is aborted (blocks freed) with an error', zeroMeans: 'off' },
  maxNumQueuedTokens: {
    flag: '--max-num-queued-tokens',
    default: 0,
    unit: 'tokens',
    help: "per model, the prompt tokens of generations waiting for a first token, whatever their protocol, before new ones are refused with a retry-after (vLLM's flag)",
    zeroMeans: 'off',
  },
  wsMaxMessageBytes: { flag: '--ws-max-message-bytes', default: 4 * MiB, unit: 'bytes', help: 'largest WebSocket message a client may send' },
  wsMaxGenerations: { flag: '--ws-max-generations', default: 16, unit: 'count', help: 'generations one WebSocket may run at once' },
  wsMaxBufferedBytes: { flag: '--ws-max-buffered-bytes', default: 16 * MiB, unit: 'bytes', help: 'unsent bytes a WebSocket may hold before the client is dropped' },
  wsMaxInvalidMessages: { flag: '--ws-max-invalid-messages', default: 100, unit: 'count', help: 'a WebSocket client sending this many invalid messages in a row is disconnected (1008)' },
  wsSendTimeoutSecs: { flag: '--ws-send-timeout-secs', default: 30, unit: 'secs', help: 'a WebSocket client that reads nothing for this long while output waits is dropped' },
  streamSendTimeoutSecs: {
    flag: '--stream-send-timeout-secs',
    default: 30,
    unit: 'secs',
    help: 'an SSE client (OpenAI streams, generate_stream) that reads nothing for this long while output waits is dropped',
  },
  sseKeepAliveIntervalSecs: {
    flag: '--sse-keep-alive-interval',
    default: 15,
    unit: 'secs',
    help: "an SSE stream (OpenAI chat / completions / Responses, Anthropic Messages, generate_stream) silent this long, while its request waits in the queue, in prefill or between events, gets a ': keep-alive' comment, so proxies with an idle timeout keep it (vLLM's flag and comment)",
    zeroMeans: 'off',
  },
  undeliveredOutputTimeoutSecs: {
    flag: '--undelivered-output-timeout-secs',
    default: 5,
    unit: 'secs',
    help: 'while a model unloads, sleeps, swaps precision or the server drains, a client (WebSocket, SSE, gRPC stream) whose output has waited unread this long is disconnected and its generations ended, so the model goes without waiting for it (applies even when the send timeouts are longer)',
  },
  responsesStoreSize: { flag: '--responses-store-size', default: 1000, unit: 'count', help: 'responses /v1/responses keeps for previous_response_id and GET (store: true); the oldest go first' },
  responsesStoreTtlSecs: { flag: '--responses-store-ttl-secs', default: 3600, unit: 'secs', help: 'a stored /v1/responses response is forgotten this long after it finished' },
  memoryBudgetBytes: {
    flag: '--memory-budget-bytes',
    default: 0,
    unit: 'bytes',
    help: 'weights and KV pools of all loaded models together (a precision swap counts both variants while they overlap); a load past it is refused',
    zeroMeans: 'unlimited',
  },
  computeThreadNice: {
    flag: '--compute-thread-nice',
    default: 10,
    unit: 'nice steps',
    max: 19,
    help: "how far below the server's priority the threads that run models (LLM engines, model instances, and the ONNX Runtime and grammar threads they start) are scheduled, so HTTP, gRPC, health checks and /metrics answer promptly while models saturate the cores (Linux)",
    zeroMeans: 'the same priority',
  },
  structuredOutputsCompileTimeoutSecs: {
    flag: '--structured-outputs-compile-timeout-secs',
    default: 10,
    unit: 'secs',
    help: "the longest a new grammar (a JSON schema, regex, choice or EBNF of a constrained request) may take to compile; each is first compiled on a probe thread that is stopped at this bound, and the request is refused with a 400 naming it, while other requests' grammars go on",
    zeroMeans: 'unbounded (compiled on the grammar worker directly)',
  },
  grpcMaxConcurrentStreams: { flag: '--grpc-max-concurrent-streams', default: 128, unit: 'count', help: 'concurrent calls (HTTP/2 streams) per gRPC connection' },
  grpcMaxMessageBytes: { flag: '--grpc-max-message-bytes', default: 2 ** 31 - 1, unit: 'bytes', help: "largest gRPC message received or sent (Triton's and tritonclient's INT32_MAX)" },
} as const satisfies Record<string, LimitSpec>;

export type LimitName = keyof typeof LIMITS;
export type ResourceLimits = { readonly [K in LimitName]: number };

export const DEFAULT_LIMITS: ResourceLimits = Object.fromEntries(Object.entries(LIMITS).map(([name, spec]) => [name, spec.default])) as ResourceLimits;

const LIMIT_SPECS: readonly [LimitName, LimitSpec][] = Object.entries(LIMITS) as [LimitName, LimitSpec][];

/** The USAGE lines of every limit, in the table's order: the flag, then its help indented below. */
export function limitsUsage(): string {
  return LIMIT_SPECS.map(([, spec]) => {
    const zero = spec.zeroMeans !== undefined ? `; 0 = ${spec.zeroMeans}` : '';
    const max = spec.max !== undefined ? `; at most ${spec.max}` : '';
    return `  ${spec.flag} N\n      ${spec.help} (${spec.unit}; default ${spec.default}${zero}${max})`;
  }).join('\n');
}

/** parseArgs option declarations for every limit flag. */
export function limitArgOptions(): Record<string, { type: 'string' }> {
  return Object.fromEntries(LIMIT_SPECS.map(([, spec]) => [spec.flag.slice(2), { type: 'string' as const }]));
}

/**
 * Reads every limit from parsed flag values. Counts and byte sizes must be integers; seconds may
 * be fractional. `fail` builds the parser's own error type.
 */
export function readLimits(values: Readonly<Record<string, unknown>>, fail: (message: string) => Error): ResourceLimits {
  const limits = Object.fromEntries(
    LIMIT_SPECS.map(([name, spec]) => {
      const raw = values[spec.flag.slice(2)];
      if (raw === undefined) return [name, spec.default];
      const n = Number(raw);
      const zeroAllowed = spec.zeroMeans !== undefined;
      const integral = spec.unit !== 'secs';
      const ok = typeof raw === 'string' && raw.trim() !== '' && Number.isFinite(n) && (integral ? Number.isSafeInteger(n) : true) && (n > 0 || (zeroAllowed && n === 0));
      if (!ok) throw fail(`${spec.flag} must be a ${zeroAllowed ? 'non-negative' : 'positive'} ${integral ? 'integer' : 'number'}, got '${String(raw)}'`);
      if (spec.max !== undefined && n > spec.max) throw fail(`${spec.flag} must be at most ${spec.max}, got '${String(raw)}'`);
      return [name, n];
    }),
  ) as ResourceLimits;
  if (limits.httpHeaderTimeoutSecs > limits.httpRequestTimeoutSecs) {
    throw fail(`--http-header-timeout-secs (${limits.httpHeaderTimeoutSecs}) must not exceed --http-request-timeout-secs (${limits.httpRequestTimeoutSecs})`);
  }
  return limits;
}

/** The prompt-character cap for a model: the flag, or 16 characters per context token (4 × a generous 4 bytes per token). */
export function promptCharLimit(limits: Pick<ResourceLimits, 'maxPromptChars'>, contextLength: number): number {
  return limits.maxPromptChars > 0 ? limits.maxPromptChars : 16 * contextLength;
}

/**
 * Most characters tokenized on the main thread in one go: ~16K characters encode in ~15 ms.
 * A longer prompt goes to the tokenizer worker; many embedding inputs yield between chunks this size.
 */
export const OFFTHREAD_MIN_CHARS = 16 * 1024;
