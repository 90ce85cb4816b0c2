// Triton's logging and trace extensions over HTTP: GET/POST /v2/logging and
// GET/POST /v2[/models/{m}]/trace/setting. A POST answers the settings now in effect; a refused
// one is a 400 in KServe's shape and changes nothing. Shared memory (system and CUDA) is not
// supported: its routes answer 501 with a message that says so, instead of a generic 404.

import type { FastifyInstance } from 'fastify';
import type { InferenceService } from '../../../contracts/inference-service.js';
import type { RuntimeSettings } from '../../../config/runtime-settings.js';
import { TRACE_STATUS, TRACE_STATUS_KEY, type TraceSettings, type TraceSettingsUpdate, type TraceSettingsValue } from '../../../config/trace-settings.js';
import { ConveyorError, invalidArg } from '../../../errors.js';
import { withAccess } from '../../kit/access.js';
import { optionalJsonBody } from './repository.js';
import { setOwnEntry } from '../../../contracts/own-entry.js';

export function registerSettingsRoutes(app: FastifyInstance, service: InferenceService, settings: RuntimeSettings): void {
  app.get('/v2/logging', async () => settings.log.value);
  app.post('/v2/logging', withAccess('control'), async (request) => {
    const problem = settings.log.update(optionalJsonBody(request.body, 'the log settings request'));
    if (problem !== undefined) throw invalidArg(problem);
    return settings.log.value;
  });
  app.get('/v2/trace/setting', async () => traceJson(settings.trace.get()));
  app.post('/v2/trace/setting', withAccess('control'), async (request) => traceJson(updateTrace(settings.trace, request.body)));
  app.get<{ Params: { model: string } }>('/v2/models/:model/trace/setting', async (request) => {
    service.modelConfig(request.params.model); // an unknown model is refused, as everywhere
    return traceJson(settings.trace.get(request.params.model));
  });
  app.post<{ Params: { model: string } }>('/v2/models/:model/trace/setting', withAccess('control'), async (request) => {
    service.modelConfig(request.params.model);
    return traceJson(updateTrace(settings.trace, request.body, request.params.model));
  });
}

function updateTrace(trace: TraceSettings, body: unknown, model?: string): TraceSettingsValue {
  const result = trace.update(traceUpdateFromJson(optionalJsonBody(body, 'the trace settings request')), model);
  if ('error' in result) throw invalidArg(result.error);
  return result.settings;
}

/** JSON values → lists of strings: a string or number is one value, an array several, null clears. */
function traceUpdateFromJson(body: Readonly<Record<string, unknown>>): TraceSettingsUpdate {
  const update: Record<string, readonly string[] | null> = {};
  for (const [key, value] of Object.entries(body)) {
    const one = (v: unknown): string => {
      if (typeof v === 'string') return v;
      if (typeof v === 'number' && Number.isFinite(v)) return String(v);
      throw invalidArg(`trace setting '${key}' must be a string, a number, a list of them, or null`);
    };
    setOwnEntry(update, key, value === null ? null : Array.isArray(value) ? value.map(one) : [one(value)]);
  }
  return update;
}

/** Triton's JSON: trace_level a list, every other setting one string; plus what is actually traced. */
function traceJson(settings: TraceSettingsValue): Record<string, string | readonly string[]> {
  const json: Record<string, string | readonly string[]> = {};
  for (const [key, values] of Object.entries(settings)) json[key] = key === 'trace_level' ? values : (values[0] ?? '');
  json[TRACE_STATUS_KEY] = TRACE_STATUS;
  return json;
}

const SHARED_MEMORY_KINDS = [
  ['systemsharedmemory', 'system shared memory'],
  ['cudasharedmemory', 'CUDA shared memory'],
] as const;

export function registerSharedMemoryRoutes(app: FastifyInstance): void {
  for (const [path, what] of SHARED_MEMORY_KINDS) {
    const refuse = async (): Promise<never> => {
      throw new ConveyorError('UNSUPPORTED', `${what} is not supported by this server: send tensor data in the request body (JSON or binary tensors)`);
    };
    app.get(`/v2/${path}/status`, refuse);
    app.get(`/v2/${path}/region/:region/status`, refuse);
    app.post(`/v2/${path}/region/:region/register`, withAccess('control'), refuse);
    app.post(`/v2/${path}/unregister`, withAccess('control'), refuse);
    app.post(`/v2/${path}/region/:region/unregister`, withAccess('control'), refuse);
  }
}
