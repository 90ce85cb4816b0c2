// The only importer of @huggingface/hub: the Hub's model info, file list and file contents, and
// the cache layout's own functions (where the cache is, how a repository's folder is named). The
// client's fetches go through one wrapper that adds the token and keeps the last failure's status
// and X-Error-Code, so every failure becomes a HubError naming the repository and what to do.
//
// What the client does not do, and cache.ts does: downloadFileToCacheDir writes each blob afresh
// (no resume), checks no size or hash, and snapshotDownload fetches every file of a repository;
// so files are listed here and fetched one by one through downloadFile's Blob, whose slice() is
// an HTTP Range request (WebBlob) or a xet reconstruction of the same bytes (XetBlob).

import { downloadFile, getHFHubCachePath, getRepoFolderName, HubApiError, listFiles, modelInfo } from '@huggingface/hub';
import { HubError } from './errors.js';

export const DEFAULT_ENDPOINT = 'https://huggingface.co';

export interface HubConnection {
  /** HF_ENDPOINT, else the public Hub. */
  readonly endpoint: string;
  /** --hf-token, else HF_TOKEN (or the token file Python's `hf auth login` writes). */
  readonly token?: string;
  /** How long a request may wait for the Hub's answer (HF_HUB_ETAG_TIMEOUT, default 10 s); the body may take longer. */
  readonly timeoutMs?: number;
}

export const DEFAULT_TIMEOUT_MS = 10_000;

/** One file of a repository at a commit, as the tree listing reports it. */
export interface RepoFile {
  readonly path: string;
  readonly size: number;
  /** LFS files: the content's sha256 (also the blob's name in the cache). */
  readonly sha256?: string;
  /** Plain git files: the git blob id, sha1 over `blob <size>\0<content>` (the blob's name in the cache). */
  readonly gitOid?: string;
  /** The cache's blob name, as both clients write it: the LFS sha256, else the xet hash, else the git oid. */
  readonly blobName: string;
}

/** The Hub cache directory: HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub (the client's rule, Python's too). */
export function hubCacheDir(): string {
  return getHFHubCachePath();
}

/** `models--ORG--NAME`: a model repository's folder in the cache. */
export function repoFolderName(repo: string): string {
  return getRepoFolderName({ type: 'model', name: repo });
}

interface Failure {
  status: number;
  code: string | null;
}

/**
 * A fetch for the client: the token on every request, the last failed response remembered, and
 * a time limit on the answer. The timer is what keeps the process alive meanwhile: a connection
 * the other side drops before answering can leave fetch pending with nothing else holding the
 * event loop, and the CLI would then exit 0 having done nothing.
 */
function hubFetch(connection: HubConnection, last: { failure?: Failure }): typeof fetch {
  return async (input, init) => {
    const headers = new Headers(init?.headers);
    if (connection.token && !headers.has('authorization')) headers.set('authorization', `Bearer ${connection.token}`);
    const timeoutMs = connection.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const answered = new AbortController();
    const timer = setTimeout(() => answered.abort(new Error(`no answer within ${timeoutMs / 1000} s`)), timeoutMs);
    const signal = init?.signal ? AbortSignal.any([init.signal, answered.signal]) : answered.signal;
    try {
      const response = await fetch(input, { ...init, headers, signal });
      if (!response.ok) last.failure = { status: response.status, code: response.headers.get('x-error-code') };
      return response;
    } finally {
      clearTimeout(timer);
    }
  };
}

/** What a failed call means for the user, from the status and X-Error-Code the Hub answered (or the network error). */
function hubFailure(error: unknown, repo: string, revision: string, failure: Failure | undefined, path?: string): HubError {
  if (error instanceof HubError) return error;
  const status = error instanceof HubApiError ? error.statusCode : failure?.status;
  const code = failure?.code ?? null;
  const tokenHint = 'set HF_TOKEN or pass --hf-token with a token that may read it (and accept its terms on the Hub if it is gated)';
  if (code === 'GatedRepo' || ((status === 401 || status === 403) && code !== 'RepoNotFound')) {
    return new HubError('gated', `${repo}: the Hub refused access (HTTP ${status}: gated or private): ${tokenHint}`);
  }
  if (code === 'RepoNotFound' || (status === 404 && code === null && path === undefined)) {
    return new HubError('not-found', `${repo}: no such model repository on ${'the Hub'} (check the name; a private one needs a token: ${tokenHint})`);
  }
  if (code === 'RevisionNotFound') return new HubError('revision', `${repo}: no revision '${revision}' (name an existing branch, tag or commit after '@')`);
  if (code === 'EntryNotFound' || status === 404) return new HubError('file', `${repo}@${revision}: no file ${path ?? ''} in the repository`);
  if (status !== undefined) return new HubError('network', `${repo}: the Hub answered HTTP ${status}${path ? ` for ${path}` : ''}; try again later`);
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  const why = cause?.code ?? cause?.message ?? (error as Error).message;
  return new HubError('network', `${repo}: cannot reach the Hub (${why}); check the network or HF_ENDPOINT, or set HF_HUB_OFFLINE=1 to serve what the cache holds`);
}

/** Runs one client call, turning any failure into a HubError about `repo`. */
async function call<T>(connection: HubConnection, repo: string, revision: string, path: string | undefined, run: (fetchFn: typeof fetch) => Promise<T>): Promise<T> {
  const last: { failure?: Failure } = {};
  try {
    return await run(hubFetch(connection, last));
  } catch (error) {
    throw hubFailure(error, repo, revision, last.failure, path);
  }
}

/** The commit `revision` (branch, tag or commit) names now. */
export function resolveCommit(connection: HubConnection, repo: string, revision: string): Promise<string> {
  return call(connection, repo, revision, undefined, async (fetchFn) => {
    const info = await modelInfo({ name: repo, revision, hubUrl: connection.endpoint, fetch: fetchFn, additionalFields: ['sha'] });
    const sha = (info as { sha?: unknown }).sha;
    if (typeof sha !== 'string' || !/^[0-9a-f]{40}$/.test(sha)) throw new HubError('network', `${repo}: the Hub's model info for '${revision}' has no commit id`);
    return sha;
  });
}

/** Every file of the repository at `commit`, with sizes and hashes. */
export function listRepoFiles(connection: HubConnection, repo: string, commit: string): Promise<RepoFile[]> {
  return call(connection, repo, commit, undefined, async (fetchFn) => {
    const files: RepoFile[] = [];
    for await (const entry of listFiles({ repo: { type: 'model', name: repo }, revision: commit, recursive: true, hubUrl: connection.endpoint, fetch: fetchFn })) {
      if (entry.type !== 'file') continue;
      const sha256 = entry.lfs?.oid;
      const blobName = sha256 ?? entry.xetHash ?? entry.oid;
      if (blobName === undefined) throw new HubError('network', `${repo}: the Hub's file list gives no id for ${entry.path}`);
      files.push({ path: entry.path, size: entry.lfs?.size ?? entry.size, ...(sha256 ? { sha256 } : {}), ...(!sha256 && entry.oid ? { gitOid: entry.oid } : {}), blobName });
    }
    return files;
  });
}

/** A file's bytes from `offset` on (a Range request when offset > 0). */
export async function openFile(connection: HubConnection, repo: string, commit: string, path: string, offset: number): Promise<ReadableStream<Uint8Array>> {
  const last: { failure?: Failure } = {};
  const fetchFn = hubFetch(connection, last);
  const blob = await call(connection, repo, commit, path, () => downloadFile({ repo: { type: 'model', name: repo }, path, revision: commit, hubUrl: connection.endpoint, fetch: fetchFn }));
  if (!blob) throw new HubError('file', `${repo}@${commit}: no file ${path} in the repository`);
  // The Blob's stream reports a failed response or a cut connection as a bare message: streamFailure() names the repository and file.
  return (offset > 0 ? blob.slice(offset) : blob).stream() as ReadableStream<Uint8Array>;
}

/** A failure while reading a file's stream, as a HubError (the connection cut, or the Hub refusing the range). */
export function streamFailure(error: unknown, repo: string, path: string): HubError {
  if (error instanceof HubError) return error;
  const why = typeof error === 'string' ? error : ((error as { cause?: { code?: string } }).cause?.code ?? (error as Error).message);
  return new HubError('network', `${repo}: the download of ${path} was cut (${why}); run the same command again to resume it`);
}
