// Command-line configuration, with Triton's flag names and defaults, validated up front.

import { existsSync, readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { resolve } from 'node:path';
import type { AccessOptions } from '../security/access-policy.js';
import { keyProblem, parseKeyFile } from '../security/keys.js';
import { DEFAULT_KEEP_ALIVE, KEEP_ALIVE_FORMS, readKeepAlive, type KeepAliveMs } from './keep-alive.js';
import { limitArgOptions, limitsUsage, readLimits, type ResourceLimits } from './limits.js';
import { modelFlagArgOptions, modelFlagsUsage, readModelFlags, type ModelFlagValues } from './model-flags.js';
import { METRICS_ENGINE_TYPES, type MetricsEngineType } from '../metrics/metric-definitions.js';
import { CACHE_CONFIG_ARG_OPTIONS, CACHE_CONFIG_USAGE, readCacheConfig, type ResponseCacheConfig } from './cache-config.js';

export type ModelControlMode = 'none' | 'poll' | 'explicit';

/** The --model flags (src/config/model-flags.ts: precision, attention backend, KV cache type, lengths, parsers) sit beside the rest. */
export interface ServerOptions extends AccessOptions, ModelFlagValues {
  readonly modelRepository: string;
  readonly host: string;
  readonly httpPort: number;
  readonly grpcPort: number;
  readonly metricsPort: number;
  /** Whose metric names /metrics speaks besides Triton's: conveyor, or vllm (routers, dashboards and autoscalers built for vLLM). */
  readonly metricsEngineType: MetricsEngineType;
  readonly modelControlMode: ModelControlMode;
  readonly repositoryPollSecs: number;
  /** Models to load at startup in explicit mode; ['*'] = all. */
  readonly loadModels: readonly string[];
  /** Triton's --strict-readiness: ready only when every model is. */
  readonly strictReadiness: boolean;
  /** Seconds the shutdown drain lets in-flight requests run before ending them (Triton's --exit-timeout-secs). */
  readonly exitTimeoutSecs: number;
  readonly logLevel: 'debug' | 'info' | 'warn' | 'error';
  /** Every front end: accepted `Authorization: Bearer` keys (--api-key and --api-key-file); empty means serving is open. */
  readonly apiKeys: readonly string[];
  /** Keys for control routes (repository load/unload); they pass where API keys do (SECURITY.md). */
  readonly adminKeys: readonly string[];
  /** OpenAI routes: origins CORS allows ('*' for any); empty means CORS off. */
  readonly corsAllowOrigins: readonly string[];
  /** Every generation path: generations per model waiting for their first token before the rest are refused with a retry-after (src/serving/admission.ts); 0 = unbounded. */
  readonly maxQueuedRequests: number;
  /** `--model DIR`: serve this one Hugging Face ONNX export instead of a repository. */
  readonly model?: string;
  /** `--model ORG/NAME[@REVISION]` (a value that names no directory): a Hub model, fetched into the Hugging Face cache; the CLI resolves it to `model`. */
  readonly hubModel?: string;
  /** --hf-token: the Hub token for --model ORG/NAME and hf_model parameters (default: HF_TOKEN, then the token file `hf auth login` writes). */
  readonly hfToken?: string;
  /** The OpenAI model id for `--model` (default: the directory's name, or ORG/NAME for a Hub model). */
  readonly servedModelName?: string;
  /** Where a Hub model's files came from, shown on its /v1/models card (set by the CLI with `model`). */
  readonly modelSource?: { readonly repo: string; readonly revision: string; readonly commit: string };
  /** Timeouts, caps and sizes (src/config/limits.ts). */
  readonly limits: ResourceLimits;
  /** Models loaded on first use, kept while used, unloaded when idle or to make room (src/serving/model-residency.ts). */
  readonly onDemand: OnDemandOptions;
  /** --cache-config / --response-cache-byte-size: Triton's response cache, shared by the models that enable it; absent, no model caches. */
  readonly responseCache?: ResponseCacheConfig;
}

export interface OnDemandOptions {
  /** --load-on-demand: a request naming a repository model that is not loaded loads it (explicit mode). */
  readonly enabled: boolean;
  /** --load-timeout-secs: how long such a request waits for the load before a 503. */
  readonly loadTimeoutSecs: number;
  /** --max-loaded-models: most models loaded at once (0 = no limit); past it the least recently used idle one goes. */
  readonly maxLoadedModels: number;
  /** --max-loaded-model-bytes: most estimated memory (weights files + KV budgets) of loaded models; 0 = no limit. */
  readonly maxLoadedModelBytes: number;
  /** --keep-alive: how long an idle model stays loaded (Ollama's keep_alive); a model's keep_alive parameter and a request's field override it. */
  readonly keepAliveMs: KeepAliveMs;
}

export const DEFAULT_REPOSITORY_PATH = 'models/repository';

export const USAGE = `conveyor serve [options]
  --model-repository DIR       model repository (default ${DEFAULT_REPOSITORY_PATH})
  --host ADDRESS               address to bind (default 0.0.0.0)
  --http-port N                KServe v2 / OpenAI HTTP port (default 8000; 0 picks a free port)
  --grpc-port N                KServe v2 gRPC port (default 8001; 0 picks a free port)
  --metrics-port N             Prometheus metrics port (default 8002; 0 picks a free port)
  --metrics-engine-type TYPE   the engine whose metric names /metrics also speaks: conveyor
                               (default: conveyor: LLM names) or vllm (adds every vllm: series
                               routers read: the endpoint picker, production-stack, KEDA)
  --vllm-metric-names BOOL     older spelling: true is --metrics-engine-type vllm
  --model-control-mode MODE    none | poll | explicit (default none)
  --repository-poll-secs N     poll interval in poll mode (default 15)
  --load-model NAME            model to load at startup in explicit mode (repeatable; * = all)
  --strict-readiness BOOL      ready only when every model is ready (default true)
  --exit-timeout-secs N        SIGTERM/SIGINT drain: in-flight requests get N s, then running
                               streams end with an error (default 30; a second signal exits at once)
  --log-level LEVEL            debug | info | warn | error (default info)
  --api-key KEY                require 'Authorization: Bearer KEY' on every front end: HTTP,
                               WebSocket and gRPC 'authorization' metadata (repeatable)
  --api-key-file PATH          API keys, one a line; blank lines and # comments skipped (repeatable)
  --admin-key KEY              the key control routes (repository load/unload) need; also passes
                               as an API key. With API keys but no admin key, control is refused
  --admin-key-file PATH        admin keys, one a line, as --api-key-file (repeatable)
  --auth-health BOOL           health routes and RPCs need a key too (default false)
  --auth-metrics BOOL          the metrics port needs a key too (default false)
  --cors-allow-origin ORIGIN   allow CORS from ORIGIN on the OpenAI routes (repeatable; * = any)
  --max-queued-requests N      per model, generations waiting for a first token (every protocol
                               counts) before new ones are refused with a retry-after: 503 on
                               HTTP, 529 on Anthropic's routes, UNAVAILABLE on gRPC, an error
                               frame on WebSocket (default 0 = unbounded)
One Hugging Face ONNX export instead of a repository (vLLM's flags; the ones after --model need it,
since a repository model sets them as parameters in its config.pbtxt):
  --model DIR                  serve this export (config.json, tokenizer files, onnx/model*.onnx)
  --model ORG/NAME[@REV]       or a Hugging Face Hub model: fetched into the Hugging Face cache
                               (HF_HOME, HF_HUB_CACHE, HF_ENDPOINT, HF_HUB_OFFLINE=1 honoured), a
                               safetensors checkpoint converted once (also: conveyor pull ORG/NAME)
  --hf-token TOKEN             the Hub token for gated or private models, here and for a repository
                               model's hf_model parameter (default: HF_TOKEN)
  --served-model-name NAME     the model id for --model (default: the directory's name, or ORG/NAME)
${modelFlagsUsage()}
Models on demand (Ollama / llama.cpp router style; needs --model-control-mode explicit):
  --load-on-demand BOOL        a request naming a repository model that is not loaded loads it
                               (concurrent first requests share one load) (default false)
  --load-timeout-secs N        how long such a request waits for the load before a 503 (default 300)
  --max-loaded-models N        most models loaded at once; past it the least recently used idle
                               model is unloaded, never a busy one (default 0 = no limit)
  --max-loaded-model-bytes N   most estimated memory of loaded models (weights files + KV
                               budgets), evicting as above (default 0 = no limit)
  --keep-alive DURATION        unload a model idle this long: 5m, 30s, 1h, seconds; 0 = after each
                               request, -1 = never (default ${DEFAULT_KEEP_ALIVE}; a model's keep_alive parameter
                               and a request's keep_alive field override it)
${CACHE_CONFIG_USAGE}
Resource limits:
${limitsUsage()}`;

export class OptionsError extends Error {}

function port(value: string | undefined, flag: string, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new OptionsError(`${flag} must be a port number (0-65535), got '${value}'`);
  return n;
}

function oneOf<T extends string>(value: string | undefined, flag: string, allowed: readonly T[], fallback: T): T {
  if (value === undefined) return fallback;
  if (!allowed.includes(value as T)) throw new OptionsError(`${flag} must be one of ${allowed.join(', ')}, got '${value}'`);
  return value as T;
}

function positive(value: string | undefined, flag: string, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new OptionsError(`${flag} must be a positive number, got '${value}'`);
  return n;
}

function count(value: string | undefined, flag: string, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 0) throw new OptionsError(`${flag} must be a non-negative integer, got '${value}'`);
  return n;
}

/** The flags as parseArgs reads them (every value a string, or a list of them). */
function readFlags(argv: readonly string[]) {
  try {
    return parseArgs({
      args: [...argv],
      allowPositionals: false,
      options: {
        'model-repository': { type: 'string' },
        host: { type: 'string' },
        'http-port': { type: 'string' },
        'grpc-port': { type: 'string' },
        'metrics-port': { type: 'string' },
        ...METRICS_ENGINE_FLAGS,
        'model-control-mode': { type: 'string' },
        'repository-poll-secs': { type: 'string' },
        'load-model': { type: 'string', multiple: true },
        'strict-readiness': { type: 'string' },
        'exit-timeout-secs': { type: 'string' },
        'log-level': { type: 'string' },
        model: { type: 'string' },
        'served-model-name': { type: 'string' },
        'hf-token': { type: 'string' },
        ...modelFlagArgOptions(),
        'api-key': { type: 'string', multiple: true },
        'api-key-file': { type: 'string', multiple: true },
        'admin-key': { type: 'string', multiple: true },
        'admin-key-file': { type: 'string', multiple: true },
        'auth-health': { type: 'string' },
        'auth-metrics': { type: 'string' },
        'cors-allow-origin': { type: 'string', multiple: true },
        'max-queued-requests': { type: 'string' },
        'load-on-demand': { type: 'string' },
        'load-timeout-secs': { type: 'string' },
        'max-loaded-models': { type: 'string' },
        'max-loaded-model-bytes': { type: 'string' },
        'keep-alive': { type: 'string' },
        ...CACHE_CONFIG_ARG_OPTIONS,
        ...limitArgOptions(),
      },
    }).values;
  } catch (error) {
    throw new OptionsError((error as Error).message);
  }
}

export function parseServerOptions(argv: readonly string[]): ServerOptions {
  const v = readFlags(argv);
  const mode = oneOf(v['model-control-mode'], '--model-control-mode', ['none', 'poll', 'explicit'] as const, 'none');
  const loadModels = v['load-model'] ?? [];
  if (loadModels.length > 0 && mode !== 'explicit') throw new OptionsError('--load-model needs --model-control-mode explicit');
  if (loadModels.includes('*') && loadModels.length > 1) throw new OptionsError("--load-model '*' must be the only --load-model");
  if (v.model !== undefined && v['model-repository'] !== undefined) throw new OptionsError('--model and --model-repository are alternatives; give one');
  if (v['served-model-name'] !== undefined && v.model === undefined) throw new OptionsError('--served-model-name needs --model');
  const modelFlags = readModelFlags(v, v.model, (message) => new OptionsError(message));
  const responseCache = readCacheConfig(v, (message) => new OptionsError(message));
  const access = accessOptions({
    apiKeys: v['api-key'],
    apiKeyFiles: v['api-key-file'],
    adminKeys: v['admin-key'],
    adminKeyFiles: v['admin-key-file'],
    authHealth: v['auth-health'],
    authMetrics: v['auth-metrics'],
  });
  return {
    modelRepository: resolve(v['model-repository'] ?? DEFAULT_REPOSITORY_PATH),
    host: v.host ?? '0.0.0.0',
    httpPort: port(v['http-port'], '--http-port', 8000),
    grpcPort: port(v['grpc-port'], '--grpc-port', 8001),
    metricsPort: port(v['metrics-port'], '--metrics-port', 8002),
    metricsEngineType: metricsEngineType(v['metrics-engine-type'], v['vllm-metric-names']),
    modelControlMode: mode,
    repositoryPollSecs: positive(v['repository-poll-secs'], '--repository-poll-secs', 15),
    loadModels,
    strictReadiness: oneOf(v['strict-readiness'], '--strict-readiness', ['true', 'false'] as const, 'true') === 'true',
    exitTimeoutSecs: positive(v['exit-timeout-secs'], '--exit-timeout-secs', 30),
    logLevel: oneOf(v['log-level'], '--log-level', ['debug', 'info', 'warn', 'error'] as const, 'info'),
    ...access,
    corsAllowOrigins: v['cors-allow-origin'] ?? [],
    maxQueuedRequests: count(v['max-queued-requests'], '--max-queued-requests', 0),
    limits: readLimits(v, (message) => new OptionsError(message)),
    onDemand: onDemandOptions(v, mode),
    ...(responseCache ? { responseCache } : {}),
    ...(v.model === undefined ? {} : namesHubModel(v.model) ? { hubModel: v.model } : { model: resolve(v.model) }),
    ...(v['hf-token'] !== undefined ? { hfToken: v['hf-token'] } : {}),
    ...(v['served-model-name'] !== undefined ? { servedModelName: v['served-model-name'] } : {}),
    ...modelFlags,
  };
}

/**
 * A --model value that names no file or directory and reads ORG/NAME[@REVISION] is a Hub model
 * (as vLLM's `serve Qwen/Qwen3-0.6B`); src/hub/hub-id.ts parses it.
 */
function namesHubModel(value: string): boolean {
  return !existsSync(value) && /^[A-Za-z0-9][A-Za-z0-9_.-]*\/[A-Za-z0-9][A-Za-z0-9_.-]*(@\S+)?$/.test(value);
}

function onDemandOptions(v: Readonly<Record<string, string | boolean | (string | boolean)[] | undefined>>, mode: ModelControlMode): OnDemandOptions {
  const text = (flag: string): string | undefined => (typeof v[flag] === 'string' ? v[flag] : undefined);
  const enabled = bool(text('load-on-demand'), '--load-on-demand');
  if (enabled && mode !== 'explicit') throw new OptionsError('--load-on-demand true needs --model-control-mode explicit (models come and go at run time)');
  const rawKeepAlive = text('keep-alive') ?? DEFAULT_KEEP_ALIVE;
  const keepAliveMs = readKeepAlive(rawKeepAlive);
  if (keepAliveMs === undefined) throw new OptionsError(`--keep-alive must be ${KEEP_ALIVE_FORMS}, got '${rawKeepAlive}'`);
  return {
    enabled,
    loadTimeoutSecs: positive(text('load-timeout-secs'), '--load-timeout-secs', 300),
    maxLoadedModels: count(text('max-loaded-models'), '--max-loaded-models', 0),
    maxLoadedModelBytes: count(text('max-loaded-model-bytes'), '--max-loaded-model-bytes', 0),
    keepAliveMs,
  };
}

/** The metric-naming flags: --metrics-engine-type, and the --vllm-metric-names it grew out of. */
const METRICS_ENGINE_FLAGS = { 'metrics-engine-type': { type: 'string' }, 'vllm-metric-names': { type: 'string' } } as const;

/** --metrics-engine-type, with --vllm-metric-names (which it grew out of) as an alias that must agree with it. */
function metricsEngineType(type: string | undefined, vllmNames: string | undefined): MetricsEngineType {
  const chosen = oneOf(type, '--metrics-engine-type', METRICS_ENGINE_TYPES, 'conveyor');
  if (vllmNames === undefined) return chosen;
  const alias = oneOf(vllmNames, '--vllm-metric-names', ['true', 'false'] as const, 'false') === 'true' ? 'vllm' : 'conveyor';
  if (type !== undefined && alias !== chosen) throw new OptionsError(`--vllm-metric-names ${vllmNames} contradicts --metrics-engine-type ${type}; give only --metrics-engine-type`);
  return alias;
}

function bool(value: string | undefined, flag: string): boolean {
  return oneOf(value, flag, ['true', 'false'] as const, 'false') === 'true';
}

/** Keys from `--<flag>` values and `--<flag>-file` files, in that order, without duplicates. */
function keysOf(flag: string, keys: readonly string[] | undefined, files: readonly string[] | undefined): string[] {
  for (const key of keys ?? []) {
    const problem = keyProblem(key);
    if (problem) throw new OptionsError(`--${flag} must be non-empty and without whitespace (it ${problem})`);
  }
  const fromFiles = (files ?? []).flatMap((path) => {
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (error) {
      throw new OptionsError(`--${flag}-file: cannot read '${path}' (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    try {
      return parseKeyFile(text, `--${flag}-file '${path}'`);
    } catch (error) {
      throw new OptionsError((error as Error).message);
    }
  });
  return [...new Set([...(keys ?? []), ...fromFiles])];
}

interface AccessFlags {
  readonly apiKeys: readonly string[] | undefined;
  readonly apiKeyFiles: readonly string[] | undefined;
  readonly adminKeys: readonly string[] | undefined;
  readonly adminKeyFiles: readonly string[] | undefined;
  readonly authHealth: string | undefined;
  readonly authMetrics: string | undefined;
}

function accessOptions(flags: AccessFlags): AccessOptions {
  const apiKeys = keysOf('api-key', flags.apiKeys, flags.apiKeyFiles);
  const adminKeys = keysOf('admin-key', flags.adminKeys, flags.adminKeyFiles);
  // One key in both roles would make "which rights does it carry" depend on reading order.
  if (apiKeys.some((k) => adminKeys.includes(k))) throw new OptionsError('a key cannot be both an API key and an admin key');
  const authHealth = bool(flags.authHealth, '--auth-health');
  const authMetrics = bool(flags.authMetrics, '--auth-metrics');
  const noKeys = apiKeys.length === 0 && adminKeys.length === 0;
  if (noKeys && authHealth) throw new OptionsError('--auth-health true needs a key to check (--api-key or --admin-key)');
  if (noKeys && authMetrics) throw new OptionsError('--auth-metrics true needs a key to check (--api-key or --admin-key)');
  return { apiKeys, adminKeys, authHealth, authMetrics };
}
