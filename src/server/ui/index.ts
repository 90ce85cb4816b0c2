// The built-in dashboard and playground: a static page, its stylesheet and one script bundle
// (built from ui/src by `npm run ui:build` into ui/public, committed), plus the JSON status the
// dashboard polls. Static files are class 'ui' (always open: they hold no data and a browser
// cannot send a key when it navigates); the status route is 'api', like every data route.

import { existsSync, readFileSync } from 'node:fs';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { withAccess } from '../kit/access.js';
import type { MetricFamily, UiStatus } from '../../contracts/ui-status.js';
import type { RecentErrors } from './recent-errors.js';

export interface UiOptions {
  /** The server's metric families at this instant (src/metrics ConveyorMetrics.families). */
  readonly families: () => Promise<readonly MetricFamily[]>;
  readonly errors: RecentErrors;
}

// A directory URL (not a file's): the layering test reads a `new URL('….js', import.meta.url)` as an import.
const PUBLIC_DIR = new URL('../../../ui/public/', import.meta.url);

const ASSETS = [
  { path: 'index.html', type: 'text/html; charset=utf-8' },
  { path: 'app.js', type: 'text/javascript; charset=utf-8' },
  { path: 'style.css', type: 'text/css; charset=utf-8' },
] as const;

type AssetName = (typeof ASSETS)[number]['path'];

/** The files, read once at startup; a missing bundle is answered with how to build it, never a crash. */
function readAssets(): Map<AssetName, { body: string; type: string } | undefined> {
  return new Map(
    ASSETS.map(({ path, type }) => {
      const url = new URL(path, PUBLIC_DIR);
      return [path, existsSync(url) ? { body: readFileSync(url, 'utf8'), type } : undefined];
    }),
  );
}

export function registerUiRoutes(app: FastifyInstance, options: UiOptions): void {
  const assets = readAssets();
  const serve = (name: AssetName) => async (_request: unknown, reply: FastifyReply) => {
    const asset = assets.get(name);
    if (asset === undefined) return reply.code(503).send({ error: `the web UI is not built (ui/public/${name} is missing): run npm run ui:build` });
    return reply.header('content-type', asset.type).header('cache-control', 'no-cache').header('x-content-type-options', 'nosniff').send(asset.body);
  };
  for (const path of ['/', '/ui', '/ui/']) app.get(path, withAccess('ui'), serve('index.html'));
  app.get('/ui/app.js', withAccess('ui'), serve('app.js'));
  app.get('/ui/style.css', withAccess('ui'), serve('style.css'));
  app.get('/ui/api/status', withAccess('api'), async (): Promise<UiStatus> => ({ time_ms: Date.now(), metrics: await options.families(), errors: options.errors.list() }));
}
