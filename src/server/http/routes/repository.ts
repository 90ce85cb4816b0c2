// Triton's model repository extension: index, load (optionally with an override config and
// files), unload (optionally with dependents).

import type { FastifyInstance } from 'fastify';
import type { InferenceService, LoadOverride } from '../../../contracts/inference-service.js';
import { invalidArg } from '../../../errors.js';
import { expectObject, optionalBoolean, parseJson } from '../codec/json-body.js';
import type { JsonObject } from '../codec/json-body.js';
import { withAccess } from '../../kit/access.js';

const FILE_PREFIX = 'file:';
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** An optional JSON body: absent or empty reads as {}. */
export function optionalJsonBody(body: unknown, what: string): JsonObject {
  if (!Buffer.isBuffer(body) || body.byteLength === 0) return {};
  return expectObject(parseJson(body.toString('utf8')), what);
}

export function registerRepositoryRoutes(app: FastifyInstance, service: InferenceService): void {
  app.post('/v2/repository/index', async (request) => {
    const body = optionalJsonBody(request.body, 'the repository index request');
    const ready = optionalBoolean(body, 'ready', 'the repository index field') ?? false;
    return service.repositoryIndex(ready);
  });
  app.post<{ Params: { model: string } }>('/v2/repository/models/:model/load', withAccess('control'), async (request, reply) => {
    const parameters = requestParameters(optionalJsonBody(request.body, 'the load request'), 'load');
    const override = decodeLoadOverride(parameters);
    await service.loadModel(request.params.model, override);
    return reply.code(200).send();
  });
  app.post<{ Params: { model: string } }>('/v2/repository/models/:model/unload', withAccess('control'), async (request, reply) => {
    const parameters = requestParameters(optionalJsonBody(request.body, 'the unload request'), 'unload');
    const unloadDependents = optionalBoolean(parameters, 'unload_dependents', 'the unload parameter') ?? false;
    await service.unloadModel(request.params.model, { unloadDependents });
    return reply.code(200).send();
  });
}

function requestParameters(body: JsonObject, what: string): JsonObject {
  if (body.parameters === undefined) return {};
  return expectObject(body.parameters, `the ${what} request's 'parameters'`);
}

/** `config` (a ModelConfig JSON string) and `file:<version>/<path>` (base64) parameters. */
export function decodeLoadOverride(parameters: JsonObject): LoadOverride | undefined {
  const { config } = parameters;
  if (config !== undefined && typeof config !== 'string') {
    throw invalidArg("the load parameter 'config' must be a string holding the model configuration as JSON");
  }
  const files: Record<string, Uint8Array> = {};
  for (const [key, value] of Object.entries(parameters)) {
    if (!key.startsWith(FILE_PREFIX)) continue;
    const path = key.slice(FILE_PREFIX.length);
    if (typeof value !== 'string' || !BASE64.test(value)) {
      throw invalidArg(`the load parameter '${key}' must be the file's contents in base64`);
    }
    if (path === '') throw invalidArg(`the load parameter '${key}' needs a path, as in 'file:1/model.onnx'`);
    files[path] = Buffer.from(value, 'base64');
  }
  const hasFiles = Object.keys(files).length > 0;
  if (hasFiles && config === undefined) {
    throw invalidArg("the load parameters 'file:...' need the 'config' parameter too");
  }
  if (config === undefined) return undefined;
  return hasFiles ? { config, files } : { config };
}
