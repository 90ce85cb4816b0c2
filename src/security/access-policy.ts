// Who may call what, for every front end: HTTP (KServe, OpenAI, tokenizer, the WebSocket upgrade),
// gRPC and the metrics port all ask this one policy, so a key means the same everywhere.
//
// Two kinds of key, after Triton's restricted-API idea (a protected class of endpoints needs a
// credential the others do not): API keys for serving, admin keys for control. An admin key
// passes wherever an API key does. Keys arrive as `Authorization: Bearer <key>` (HTTP also takes
// Anthropic's `x-api-key`, src/server/kit/access.ts; gRPC: the
// `authorization` metadata) and are compared in constant time over their SHA-256 digests, so
// neither a key's content nor its length leaks through timing.

import { createHash, timingSafeEqual } from 'node:crypto';
import { ConveyorError } from '../errors.js';

/**
 * What a route or RPC is, for access control:
 * - `health`: liveness and readiness probes; open unless `authHealth`.
 * - `metrics`: the Prometheus scrape; open unless `authMetrics`.
 * - `api`: inference, generation, metadata, tokenization; anything not classed otherwise.
 * - `control`: changes what the server serves (repository load and unload, settings).
 * - `ui`: the built-in web UI's page, script and stylesheet; always open, since a browser cannot
 *   send a key when it navigates and they carry no data (the routes they call are `api`).
 */
export const ACCESS_CLASSES = ['api', 'control', 'health', 'metrics', 'ui'] as const;
export type AccessClass = (typeof ACCESS_CLASSES)[number];

export interface AccessOptions {
  readonly apiKeys: readonly string[];
  readonly adminKeys: readonly string[];
  /** Health routes and RPCs need a key too. */
  readonly authHealth: boolean;
  /** The metrics port needs a key too. */
  readonly authMetrics: boolean;
}

/**
 * What a class asks of a request: nothing; any configured key (API or admin); an admin key; or
 * refusal for every key (control routes when API keys exist but no admin key does).
 */
export type Requirement = 'none' | 'key' | 'admin-key' | 'refused';

type Presented = 'missing' | 'wrong' | 'api' | 'admin';

/**
 * The credential an HTTP request presents: its Authorization header, or Anthropic's
 * `x-api-key: <key>` (what Anthropic's SDKs send) as a Bearer key when there is no Authorization.
 */
export function httpCredential(headers: { readonly authorization?: string | undefined; readonly 'x-api-key'?: string | string[] | undefined }): string | undefined {
  const apiKey = headers['x-api-key'];
  if (headers.authorization !== undefined || typeof apiKey !== 'string') return headers.authorization;
  return `Bearer ${apiKey}`;
}

const digest = (key: string): Buffer => createHash('sha256').update(key).digest();
const BEARER = /^Bearer\s+(\S+)\s*$/i;

export class AccessPolicy {
  private readonly apiDigests: readonly Buffer[];
  private readonly adminDigests: readonly Buffer[];

  constructor(private readonly options: AccessOptions) {
    this.apiDigests = options.apiKeys.map(digest);
    this.adminDigests = options.adminKeys.map(digest);
  }

  /** No keys at all: every class is open (the default server). */
  static open(): AccessPolicy {
    return new AccessPolicy({ apiKeys: [], adminKeys: [], authHealth: false, authMetrics: false });
  }

  /** Whether any class needs a key (false: checks can be skipped entirely). */
  guardsAnything(): boolean {
    return ACCESS_CLASSES.some((access) => this.requirement(access) !== 'none');
  }

  requirement(access: AccessClass): Requirement {
    const { apiKeys, adminKeys, authHealth, authMetrics } = this.options;
    switch (access) {
      case 'health':
        return authHealth ? 'key' : 'none';
      case 'metrics':
        return authMetrics ? 'key' : 'none';
      case 'api':
        return apiKeys.length > 0 ? 'key' : 'none';
      case 'ui':
        return 'none';
      case 'control':
        // Fail closed: once any key guards the server, control needs an admin key, and a server
        // configured with API keys alone has no one who may load or unload.
        if (apiKeys.length === 0 && adminKeys.length === 0) return 'none';
        return adminKeys.length > 0 ? 'admin-key' : 'refused';
    }
  }

  /** Throws UNAUTHENTICATED (no or unknown key) or PERMISSION_DENIED (a key without the right) unless `authorization` may call `access`. */
  check(access: AccessClass, authorization: string | undefined): void {
    const needed = this.requirement(access);
    if (needed === 'none') return;
    const presented = this.presented(authorization);
    if (presented === 'missing') {
      throw new ConveyorError('UNAUTHENTICATED', "You didn't provide an API key. Send it as 'Authorization: Bearer <key>' (HTTP also takes 'x-api-key: <key>').");
    }
    if (presented === 'wrong') throw new ConveyorError('UNAUTHENTICATED', 'Incorrect API key provided.');
    if (needed === 'key' || (needed === 'admin-key' && presented === 'admin')) return;
    throw new ConveyorError(
      'PERMISSION_DENIED',
      needed === 'refused' ? 'control routes are disabled: this server has API keys but no admin key (--admin-key)' : 'this route needs an admin key; an API key does not grant it',
    );
  }

  /** One log line for startup: what each class needs. */
  describe(): string {
    const { apiKeys, adminKeys } = this.options;
    return `access: ${apiKeys.length} API key(s), ${adminKeys.length} admin key(s); ${ACCESS_CLASSES.map((c) => `${c} ${this.requirement(c)}`).join(', ')}`;
  }

  private presented(authorization: string | undefined): Presented {
    const match = authorization === undefined ? null : BEARER.exec(authorization);
    if (!match) return 'missing';
    const given = digest(match[1]!);
    // Every digest is compared, so the time does not depend on which key (if any) matched.
    let api = false;
    let admin = false;
    for (const d of this.apiDigests) api = timingSafeEqual(given, d) || api;
    for (const d of this.adminDigests) admin = timingSafeEqual(given, d) || admin;
    if (admin) return 'admin';
    return api ? 'api' : 'wrong';
  }
}
