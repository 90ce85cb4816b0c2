// The HTTP listener's defences against clients that hold sockets without finishing requests:
// header, whole-request and keep-alive idle timeouts, a cap on open connections and one per client
// address, so trickled bodies and idle sockets cannot exhaust file descriptors. Node enforces the
// timeouts; this module translates the limits table into its settings and admits connections.
//
// Past a cap a connection is not dropped unread: it goes into a small probe reserve, where its
// request is read and a health probe (a route of the 'health' access class) is served, anything
// else answered 503 with `connection: close` in its protocol's shape. So Kubernetes' probes stay
// answerable while ordinary connections exhaust the cap, and a refused client reads why. A reserve
// connection lives at most PROBE_RESERVE.lifetimeMs and serves one request; past the reserve's
// own bound (in all, or from one address) a connection is closed at once, unanswered.

import type { Server, ServerOptions } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import type { ResourceLimits } from '../../config/limits.js';
import { unavailable } from '../../errors.js';
import { accessOf } from './access.js';

export type ConnectionLimits = Pick<ResourceLimits, 'httpHeaderTimeoutSecs' | 'httpRequestTimeoutSecs' | 'httpIdleTimeoutSecs' | 'httpMaxConnections' | 'httpMaxConnectionsPerIp'>;

/** Connections beyond the caps that may still ask for a probe. */
export const PROBE_RESERVE = {
  /** In all: Node itself drops sockets past the cap plus this, before any JS runs. */
  connections: 32,
  /** From one address, so one client cannot fill the reserve (kubelet probes a pod 1–3 at a time). */
  perAddress: 4,
  /**
   * A reserve connection is closed this long after it opened, answered or not (a probe sends its
   * request at once); this also cuts short the lingering close of a refused body (readable-refusals.ts).
   */
  lifetimeMs: 2000,
} as const;

/** Why a connection was refused a place among the ordinary ones. */
export type Refusal = 'max-connections' | 'per-ip';

/** Connections refused since the last report: answered from the reserve, or closed because it was full. */
export interface RefusalReport {
  readonly maxConnections: number;
  readonly perIp: number;
  /** Closed unanswered: the reserve (in all or for the address) was full. */
  readonly unanswered: number;
}

/**
 * Node checks the header and request timeouts on a timer (30 s by default), so a timeout is only
 * enforced to within that interval; a quarter of the shorter timeout keeps the overshoot small.
 */
export function checkingIntervalMs(limits: Pick<ConnectionLimits, 'httpHeaderTimeoutSecs' | 'httpRequestTimeoutSecs'>): number {
  const shorter = Math.min(limits.httpHeaderTimeoutSecs, limits.httpRequestTimeoutSecs) * 1000;
  return Math.round(Math.min(30_000, Math.max(50, shorter / 4)));
}

/** The fastify options that carry the timeouts into http.createServer. */
export function connectionServerOptions(limits: ConnectionLimits): Pick<FastifyServerOptions, 'requestTimeout' | 'keepAliveTimeout'> & { http: ServerOptions } {
  return {
    requestTimeout: limits.httpRequestTimeoutSecs * 1000,
    keepAliveTimeout: limits.httpIdleTimeoutSecs * 1000,
    http: { headersTimeout: limits.httpHeaderTimeoutSecs * 1000, connectionsCheckingInterval: checkingIntervalMs(limits) },
  };
}

const REFUSAL_MESSAGES: Record<Refusal, (limits: ConnectionLimits) => string> = {
  'max-connections': (limits) => `The server is at its connection limit (--http-max-connections ${limits.httpMaxConnections}); retry shortly.`,
  'per-ip': (limits) => `This client address is at its connection limit (--http-max-connections-per-ip ${limits.httpMaxConnectionsPerIp}); close idle connections or retry shortly.`,
};

const bump = (counts: Map<string, number>, key: string, by: 1 | -1): void => {
  const n = (counts.get(key) ?? 0) + by;
  if (n === 0) counts.delete(key);
  else counts.set(key, n);
};

/** Counts the ordinary and reserve connections of one HTTP server and decides each new one's place. */
export class ConnectionAdmission {
  private ordinary = 0;
  private readonly ordinaryByAddress = new Map<string, number>();
  private reserved = 0;
  private readonly reservedByAddress = new Map<string, number>();
  /** Each reserve connection, with why it is there. */
  private readonly reserve = new WeakMap<Socket, Refusal>();
  private pending = { maxConnections: 0, perIp: 0, unanswered: 0 };
  private reportTimer: NodeJS.Timeout | undefined;

  /** `report` hears of refusals at most once a second (a flood would otherwise log a line per socket). */
  constructor(
    private readonly limits: ConnectionLimits,
    private readonly report: (refused: RefusalReport) => void = () => {},
  ) {}

  /** Whether either cap is on (off, the server admits every connection as Node does). */
  get enabled(): boolean {
    return this.limits.httpMaxConnections > 0 || this.limits.httpMaxConnectionsPerIp > 0;
  }

  /** Admits each new connection of `server`. */
  attach(server: Server): void {
    if (!this.enabled) return;
    if (this.limits.httpMaxConnections > 0) server.maxConnections = this.limits.httpMaxConnections + PROBE_RESERVE.connections;
    server.on('drop', () => this.refused('unanswered'));
    server.on('connection', (socket: Socket) => this.admit(socket));
  }

  /** Why `socket` is in the probe reserve; undefined for an ordinary connection. */
  reserveReason(socket: Socket): Refusal | undefined {
    return this.reserve.get(socket);
  }

  /** The answer to a request on a reserve connection that is not a probe. */
  refusalMessage(refusal: Refusal): string {
    return REFUSAL_MESSAGES[refusal](this.limits);
  }

  private admit(socket: Socket): void {
    const address = socket.remoteAddress ?? '';
    const { httpMaxConnections: cap, httpMaxConnectionsPerIp: perIp } = this.limits;
    const refusal: Refusal | undefined = perIp > 0 && (this.ordinaryByAddress.get(address) ?? 0) >= perIp ? 'per-ip' : cap > 0 && this.ordinary >= cap ? 'max-connections' : undefined;
    if (refusal === undefined) {
      this.ordinary++;
      bump(this.ordinaryByAddress, address, 1);
      socket.once('close', () => {
        this.ordinary--;
        bump(this.ordinaryByAddress, address, -1);
      });
      return;
    }
    if (this.reserved >= PROBE_RESERVE.connections || (this.reservedByAddress.get(address) ?? 0) >= PROBE_RESERVE.perAddress) {
      this.refused('unanswered');
      socket.destroy();
      return;
    }
    this.refused(refusal === 'per-ip' ? 'perIp' : 'maxConnections');
    this.reserved++;
    bump(this.reservedByAddress, address, 1);
    this.reserve.set(socket, refusal);
    const lifetime = setTimeout(() => socket.destroy(), Math.min(PROBE_RESERVE.lifetimeMs, this.limits.httpHeaderTimeoutSecs * 1000)).unref();
    socket.once('close', () => {
      clearTimeout(lifetime);
      this.reserved--;
      bump(this.reservedByAddress, address, -1);
    });
  }

  private refused(kind: keyof RefusalReport): void {
    this.pending[kind]++;
    this.reportTimer ??= setTimeout(() => {
      const refused = this.pending;
      this.pending = { maxConnections: 0, perIp: 0, unanswered: 0 };
      this.reportTimer = undefined;
      this.report(refused);
    }, 1000).unref();
  }
}

/**
 * Admits `app`'s connections under `limits` and answers requests on reserve connections: a probe
 * is served, anything else refused with UNAVAILABLE (503 in the route's protocol shape, through
 * its error handler); both with `connection: close`. Install it before any route is registered,
 * so its hook runs first on every route, the 404 handler and the WebSocket upgrade included.
 */
export function installConnectionLimits(app: FastifyInstance, limits: ConnectionLimits): ConnectionAdmission {
  const admission = new ConnectionAdmission(limits, (refused) => app.log.warn({ refused }, describeRefusals(refused, limits)));
  admission.attach(app.server);
  if (!admission.enabled) return admission;
  app.addHook('onRequest', async (request, reply) => {
    const refusal = admission.reserveReason(request.raw.socket);
    if (refusal === undefined) return;
    reply.header('connection', 'close');
    if (accessOf(request) !== 'health') throw unavailable(admission.refusalMessage(refusal));
  });
  return admission;
}

function describeRefusals(refused: RefusalReport, limits: ConnectionLimits): string {
  const parts = [
    refused.maxConnections > 0 ? `${refused.maxConnections} past --http-max-connections (${limits.httpMaxConnections})` : '',
    refused.perIp > 0 ? `${refused.perIp} past --http-max-connections-per-ip (${limits.httpMaxConnectionsPerIp})` : '',
    refused.unanswered > 0 ? `${refused.unanswered} closed unanswered (the probe reserve was full)` : '',
  ].filter((part) => part !== '');
  return `refused connections in the last second: ${parts.join(', ')}`;
}
