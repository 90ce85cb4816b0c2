// Request bodies read as JSON whatever their Content-Type (curl -d sends form encoding), for the
// front ends whose bodies are JSON documents (OpenAI, Anthropic). Depth is checked on the raw
// bytes first: validation, templates and serializers all recurse. An empty body reads as none.

import type { FastifyInstance, FastifyRequest } from 'fastify';
import { DEFAULT_LIMITS } from '../../config/limits.js';
import { jsonDepthError } from './json-depth.js';
import { routeBodyLimit } from './readable-refusals.js';

export interface JsonBodyLimits {
  /** Largest body in bytes (default: the limits table's). */
  readonly jsonMaxBodyBytes?: number | undefined;
  /** Deepest nesting (default: the limits table's). */
  readonly jsonMaxDepth?: number | undefined;
}

/** Replaces the plugin's body parsers with one JSON parser for every content type (call before registering routes). */
export function parseJsonBodies(app: FastifyInstance, limits: JsonBodyLimits): void {
  app.removeAllContentTypeParsers();
  const json = app.getDefaultJsonParser('error', 'error');
  const maxDepth = limits.jsonMaxDepth ?? DEFAULT_LIMITS.jsonMaxDepth;
  const parser = (request: FastifyRequest, body: Buffer, done: (error: Error | null, value?: unknown) => void): void => {
    // An empty body is no body, whatever the Content-Type: the OpenAI Python SDK's
    // responses.delete/cancel and vLLM's clients' /sleep and /wake_up send `application/json`
    // with nothing after it. A route that needs a body refuses `undefined` in its own words.
    if (body.byteLength === 0) return done(null, undefined);
    const tooDeep = jsonDepthError(body, maxDepth);
    if (tooDeep) return done(tooDeep);
    json(request, body.toString('utf8'), done);
  };
  const bodyLimit = limits.jsonMaxBodyBytes ?? DEFAULT_LIMITS.jsonMaxBodyBytes;
  // The routes' own limit too: 100-continue is decided by it before the parser runs.
  routeBodyLimit(app, bodyLimit);
  const parseOptions = { parseAs: 'buffer' as const, bodyLimit };
  app.addContentTypeParser('application/json', parseOptions, parser);
  app.addContentTypeParser('*', parseOptions, parser);
}
