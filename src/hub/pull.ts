// Fetching a Hub model's serving files into the cache (`conveyor pull`, `serve --model ORG/NAME`,
// a config.pbtxt's hf_model): resolve the revision to a commit, list its files, choose what
// serving needs (select.ts), fetch each into the cache (cache.ts), then write the ref. With
// HF_HUB_OFFLINE=1 nothing is asked of the network: the ref (or the commit named) leads to a
// snapshot already in the cache, Python's or ours.

import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { cachedRef, CorruptDownloadError, fetchIntoCache, repoCacheDir, snapshotDir, snapshotFiles, writeRef } from './cache.js';
import { DEFAULT_ENDPOINT, DEFAULT_TIMEOUT_MS, hubCacheDir, listRepoFiles, openFile, resolveCommit, streamFailure, type HubConnection } from './client.js';
import { HubError } from './errors.js';
import { formatHubId, isCommitHash, type HubModelId } from './hub-id.js';
import { fileProgress } from './progress.js';
import { SelectionError, selectFiles, type Selection, type ServingWants } from './select.js';

export interface HubSettings {
  /** HF_HUB_CACHE, else $HF_HOME/hub. */
  readonly cacheDir: string;
  /** HF_HOME (default ~/.cache/huggingface): converted checkpoints go under conveyor/converted/ there. */
  readonly home: string;
  readonly connection: HubConnection;
  /** HF_HUB_OFFLINE=1: serve from the cache only. */
  readonly offline: boolean;
}

const TRUE_VALUES = new Set(['1', 'true', 'yes', 'on']);

/** The settings Python's huggingface_hub reads, from the environment; `token` (--hf-token) wins over HF_TOKEN and the token file. */
export function hubSettings(env: NodeJS.ProcessEnv = process.env, token?: string): HubSettings {
  const home = env['HF_HOME'] ?? join(env['XDG_CACHE_HOME'] ?? join(homedir(), '.cache'), 'huggingface');
  const tokenFile = env['HF_TOKEN_PATH'] ?? join(home, 'token');
  const stored = existsSync(tokenFile) ? readFileSync(tokenFile, 'utf8').trim() : '';
  const chosen = token ?? env['HF_TOKEN'] ?? (stored || undefined);
  const timeoutSecs = Number(env['HF_HUB_ETAG_TIMEOUT']);
  const timeoutMs = Number.isFinite(timeoutSecs) && timeoutSecs > 0 ? timeoutSecs * 1000 : DEFAULT_TIMEOUT_MS;
  return {
    // The client reads HF_HUB_CACHE / HF_HOME itself; an env given here (tests) is read the same way.
    cacheDir: env === process.env ? hubCacheDir() : (env['HF_HUB_CACHE'] ?? join(home, 'hub')),
    home,
    connection: { endpoint: (env['HF_ENDPOINT'] ?? DEFAULT_ENDPOINT).replace(/\/+$/, ''), timeoutMs, ...(chosen ? { token: chosen } : {}) },
    offline: TRUE_VALUES.has((env['HF_HUB_OFFLINE'] ?? '').toLowerCase()),
  };
}

export interface PullReport {
  /** One line per file (and per step) where there is no terminal. */
  readonly log: (line: string) => void;
  /** A terminal to draw progress bars on; absent: log lines only. */
  readonly terminal?: NodeJS.WriteStream;
}

export interface PulledModel {
  readonly id: HubModelId;
  readonly commit: string;
  /** snapshots/<commit> in the cache. */
  readonly snapshotDir: string;
  readonly selection: Selection;
}

/** The snapshot of `id` holding what serving needs, fetched unless the settings say offline. */
export async function pullModel(id: HubModelId, wants: ServingWants, settings: HubSettings, report: PullReport): Promise<PulledModel> {
  return settings.offline ? cachedModel(id, wants, settings) : fetchModel(id, wants, settings, report);
}

function selected(id: HubModelId, paths: readonly string[], wants: ServingWants, where: string): Selection {
  try {
    return selectFiles(paths, wants);
  } catch (error) {
    if (!(error instanceof SelectionError)) throw new HubError('file', `${formatHubId(id)}: ${(error as Error).message}`);
    throw new HubError(error.failure, `${formatHubId(id)}${where} ${error.message}`);
  }
}

async function cachedModel(id: HubModelId, wants: ServingWants, settings: HubSettings): Promise<PulledModel> {
  const named = formatHubId(id);
  const missing = (what: string) =>
    new HubError('offline', `${named}: HF_HUB_OFFLINE=1 and ${what} in the cache (${settings.cacheDir}); fetch it first with the network (conveyor pull ${named}), or unset HF_HUB_OFFLINE`);
  const commit = isCommitHash(id.revision) ? id.revision : await cachedRef(settings.cacheDir, id.repo, id.revision);
  if (commit === undefined) throw missing(`no ref '${id.revision}' of it`);
  const dir = snapshotDir(settings.cacheDir, id.repo, commit);
  const paths = await snapshotFiles(dir);
  if (paths.length === 0) throw missing(`no snapshot ${commit} of it`);
  const selection = selected(id, paths, wants, ` (cached snapshot ${commit}, HF_HUB_OFFLINE=1)`);
  return { id, commit, snapshotDir: dir, selection };
}

async function fetchModel(id: HubModelId, wants: ServingWants, settings: HubSettings, report: PullReport): Promise<PulledModel> {
  const { connection } = settings;
  const commit = await resolveCommit(connection, id.repo, id.revision);
  const listing = await listRepoFiles(connection, id.repo, commit);
  const selection = selected(
    id,
    listing.map((file) => file.path),
    wants,
    ` (${commit.slice(0, 12)})`,
  );
  const byPath = new Map(listing.map((file) => [file.path, file]));
  const repoDir = repoCacheDir(settings.cacheDir, id.repo);
  const progress = fileProgress(id.repo, report.log, report.terminal);
  for (const path of selection.files) {
    const file = byPath.get(path)!;
    try {
      await fetchIntoCache(repoDir, commit, file, (offset) => openFile(connection, id.repo, commit, path, offset), progress);
    } catch (error) {
      if (error instanceof CorruptDownloadError) throw new HubError('corrupt', `${id.repo}: ${error.message}`);
      throw streamFailure(error, id.repo, path);
    }
  }
  // Last: a ref leads only to a snapshot holding every file serving needs.
  if (id.revision !== commit) await writeRef(settings.cacheDir, id.repo, id.revision, commit);
  return { id, commit, snapshotDir: snapshotDir(settings.cacheDir, id.repo, commit), selection };
}
