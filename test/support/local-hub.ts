// A local Hugging Face Hub for tests: the few endpoints and headers that the JS client (@huggingface/hub 2.17.5) and
// Python's huggingface_hub (1.33, in the hfPython() venv) use to look up a model repository and download it into the
// HF cache, served from in-memory files over plain HTTP on 127.0.0.1. What each client reads, by source file:
//
// - Model info. JS lib/model-info.ts: GET /api/models/{repo}/revision/{rev, default "HEAD"}?expand=…, reads `_id`,
//   `id`, `private`, `gated`, `downloads`, `likes`, `lastModified`, `pipeline_tag` and, as additional fields, `sha`
//   and `siblings[].rfilename` (lib/snapshot-download.ts asks for `sha`). Python hf_api.py model_info / repo_info:
//   GET /api/models/{repo} or …/revision/{quote(rev, safe="")}, `blobs=true` for files_metadata, `expand=`; ModelInfo
//   pops `id` (required), `sha`, `siblings[]` with `rfilename`, `size`, `blobId`, `lfs.{sha256,size,pointerSize}`.
//   With `expand` the Hub answers `_id`, `id` and only the fields asked for; without it, the whole record.
// - Tree. JS lib/list-files.ts: GET /api/models/{repo}/tree/{rev}[/{path}]?recursive=…&expand=…, follows
//   `Link: <…>; rel="next"` (utils/parseLinkHeader.ts wants an absolute http(s) URL). Python hf_api.py list_repo_tree
//   and utils/_pagination.py: the same path (path_in_repo quoted as one segment), `response.links["next"]`; RepoFile
//   pops `path`, `size`, `oid`, `lfs.{oid,size,pointerSize}`, `xetHash`, `lastCommit.{id,title,date}`,
//   `securityFileStatus.{status,avScan,pickleImportScan}`; RepoFolder pops `path`, `oid`. _snapshot_download.py lists
//   the tree recursively at the commit from repo_info().sha and downloads every file entry.
// - Paths info. JS lib/paths-info.ts: POST /api/models/{repo}/paths-info/{rev} with JSON {paths, expand};
//   lib/download-file-to-cache-dir.ts names the blob `lfs.oid` (sha256) or `oid` (git blob sha1) and, for a branch
//   revision, the snapshot folder `lastCommit.id`. Python hf_api.py get_paths_info posts the same as a form.
// - Resolve. Python file_download.py get_hf_file_metadata: HEAD /{repo}/resolve/{rev}/{path} with
//   Accept-Encoding: identity, following redirects only to the same or a Hub host (utils/_http.py
//   _httpx_follow_hub_redirects_with_backoff), reads `X-Repo-Commit` (required), `X-Linked-Etag` else `ETag`
//   (W/ and quotes stripped: the blob's name), `X-Linked-Size` else `Content-Length`, `Location`, and `X-Xet-Hash` +
//   `Link: rel="xet-auth"` / `X-Xet-Refresh-Route` (absent here, so no xet download: utils/_xet.py
//   parse_xet_file_data_from_response). A redirect off the Hub host is a CDN: the GET goes to `Location` without
//   Authorization. http_get streams the GET, and on a cut connection (httpx RemoteProtocolError) retries up to 5
//   times with `Range: bytes=N-`, taking a 206; it checks the total size. Errors are told apart by `X-Error-Code`
//   (RepoNotFound, GatedRepo, RevisionNotFound, EntryNotFound) and `X-Error-Message` (utils/_http.py
//   hf_raise_for_status); an EntryNotFound's `X-Repo-Commit` is cached under .no_exist/. JS lib/file-download-info.ts:
//   GET …/resolve/{rev}/{path} with `Range: bytes=0-0`, following redirects, null on 404 + EntryNotFound, size from
//   `Content-Range: bytes 0-0/{size}` (no xet Content-Type here, so no X-Linked-Size needed), etag from
//   `X-Linked-ETag` else `ETag`; it keeps the final URL only when it is on the Hub's origin, so a CDN on another
//   host is reached through the resolve URL each time. utils/WebBlob.ts then GETs the whole file (or `Range:
//   bytes=a-b` slices) and error.ts createApiError reads a JSON body's `error`.
//
// The CDN is this same server under the name `localhost` (another host name for the clients, so Python stops at
// the 302 and drops the token, as with the real cdn-lfs host). Each revision is one root commit: its sha is
// sha1(repo, revision, files), and every file's lastCommit is that commit. Unknown repos answer 401 to anonymous
// requests and 404 to authenticated ones (the Hub's answers); gated repos show their info and tree to anyone but
// their files only to `token` (401 GatedRepo without a token, 403 with another one).

import { createHash, randomBytes } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { join, relative, sep } from 'node:path';

export interface HubFile {
  readonly path: string;
  readonly content: Buffer;
  /** Stored with Git LFS; default: size >= 1 MiB, or a `*.onnx*` or `*.safetensors` name. */
  readonly lfs?: boolean;
}

export interface HubRepo {
  /** 'org/name' */
  readonly id: string;
  /** Branch or tag ('main') → the files at that revision. */
  readonly revisions: Readonly<Record<string, readonly HubFile[]>>;
  readonly gated?: boolean;
}

export interface LocalHub {
  /** http://127.0.0.1:PORT, for HF_ENDPOINT. */
  readonly url: string;
  /** The one token that opens gated repos. */
  readonly token: string;
  /** The 40-hex commit sha a revision resolves to. */
  commitOf(repo: string, revision: string): string;
  /** Requests seen, for assertions (method, path, range header); `path` is the decoded URL path without the query. */
  readonly requests: readonly { method: string; path: string; range?: string }[];
  /**
   * The next GET of `path` (repo-relative) sends only the first `bytes` bytes and destroys the socket (a cut download).
   * A GET whose body is `bytes` or shorter (a `Range: bytes=0-0` probe) is served whole and leaves the cut pending.
   */
  cutNext(repo: string, path: string, bytes: number): void;
  /**
   * Answer every request with a network-level failure (socket destroyed) while true. fetch rejects ('fetch failed',
   * ECONNRESET); huggingface_hub raises httpx.RemoteProtocolError, which, unlike a refused connection, it does not
   * take as offline: it does not fall back to its cache.
   */
  setOffline(offline: boolean): void;
  close(): Promise<void>;
}

export interface LocalHubOptions {
  /** Entries per page of a tree listing, before a `Link: rel="next"`; small by default so clients' paging is exercised. */
  readonly treePageSize?: number;
}

const LFS_MIN_SIZE = 1 << 20;
const DATE = '2025-01-01T00:00:00.000Z';
const DEFAULT_TREE_PAGE_SIZE = 10;

interface Entry {
  readonly path: string;
  readonly content: Buffer;
  /** Git blob sha1 of what git stores: the content, or the LFS pointer. */
  readonly oid: string;
  readonly lfs?: { readonly sha256: string; readonly pointer: Buffer };
}

interface Revision {
  readonly name: string;
  readonly commit: string;
  readonly files: ReadonlyMap<string, Entry>;
  /** Directory path → its direct children's paths. '' is the root. */
  readonly dirs: ReadonlyMap<string, readonly string[]>;
}

interface Repo {
  readonly id: string;
  readonly gated: boolean;
  readonly revisions: ReadonlyMap<string, Revision>;
  readonly byCommit: ReadonlyMap<string, Revision>;
  /** sha256 → content, for the CDN. */
  readonly lfsBlobs: ReadonlyMap<string, Buffer>;
}

class HubError extends Error {
  constructor(
    readonly status: number,
    readonly code: string | undefined,
    message: string,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
  }
}

export async function startLocalHub(repos: readonly HubRepo[], options: LocalHubOptions = {}): Promise<LocalHub> {
  const byId = new Map(repos.map((repo) => [repo.id, buildRepo(repo)]));
  const token = `hf_local${randomBytes(16).toString('hex')}`;
  const pageSize = options.treePageSize ?? DEFAULT_TREE_PAGE_SIZE;
  const requests: { method: string; path: string; range?: string }[] = [];
  const cuts = new Map<string, number>();
  const sockets = new Set<Socket>();
  let offline = false;

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const range = req.headers.range;
    requests.push({ method: req.method ?? 'GET', path: decodePath(url.pathname), ...(range ? { range } : {}) });
    if (offline) {
      req.socket.destroy();
      return;
    }
    handle(req, res, url).catch((error: unknown) => {
      if (error instanceof HubError) return sendError(req, res, error);
      sendError(req, res, new HubError(500, undefined, error instanceof Error ? error.message : String(error)));
    });
  });
  server.on('connection', (socket: Socket) => {
    if (offline) return socket.destroy();
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  const hubUrl = `http://127.0.0.1:${port}`;
  const cdnUrl = `http://localhost:${port}`;

  async function handle(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const parts = url.pathname.split('/').slice(1).map(decodeURIComponent);
    const method = req.method ?? 'GET';
    // huggingface_hub's agent detection fetches this registry best-effort (utils/_detect_agent.py): an empty one.
    if (method === 'GET' && url.pathname === '/api/agent-harnesses') return sendJson(res, { standardEnvVars: [], harnesses: {} });
    if (parts[0] === 'api' && parts[1] === 'models' && parts.length >= 4) {
      const repo = findRepo(`${parts[2]}/${parts[3]}`, req);
      const [action, revision, ...rest] = parts.slice(4);
      if (method === 'GET' && action === undefined) return sendJson(res, modelInfo(repo, resolveRevision(repo, 'main'), url.searchParams));
      if (method === 'GET' && action === 'revision' && revision !== undefined && rest.length === 0) {
        return sendJson(res, modelInfo(repo, resolveRevision(repo, revision), url.searchParams));
      }
      if (method === 'GET' && action === 'tree' && revision !== undefined) return sendTree(res, url, resolveRevision(repo, revision), rest.join('/'));
      if (method === 'POST' && action === 'paths-info' && revision !== undefined && rest.length === 0) {
        const rev = resolveRevision(repo, revision);
        const { paths, expand } = await readPathsInfoBody(req);
        return sendJson(
          res,
          paths.flatMap((path) => pathInfo(rev, path, expand)),
        );
      }
    } else if (parts[0] === 'cdn-lfs' && parts.length >= 5 && (method === 'GET' || method === 'HEAD')) {
      return sendCdn(req, res, `${parts[1]}/${parts[2]}`, parts[3]!, parts.slice(4).join('/'));
    } else if (parts.length >= 5 && (parts[2] === 'resolve' || parts[2] === 'raw') && (method === 'GET' || method === 'HEAD')) {
      const repo = findRepo(`${parts[0]}/${parts[1]}`, req);
      checkGate(repo, req);
      return sendResolve(req, res, repo, resolveRevision(repo, parts[3]!), parts.slice(4).join('/'), parts[2] === 'raw');
    }
    throw new HubError(404, undefined, 'Not found');
  }

  function findRepo(id: string, req: IncomingMessage): Repo {
    const repo = byId.get(id);
    if (repo) return repo;
    // Anonymous: 401 (the Hub does not say whether a private repo exists); with a token: 404.
    const status = bearer(req) === undefined ? 401 : 404;
    throw new HubError(status, 'RepoNotFound', 'Repository not found');
  }

  function checkGate(repo: Repo, req: IncomingMessage): void {
    if (!repo.gated) return;
    const given = bearer(req);
    if (given === token) return;
    if (given === undefined) {
      throw new HubError(401, 'GatedRepo', `Access to model ${repo.id} is restricted. You must have access to it and be authenticated to access it. Please log in.`);
    }
    throw new HubError(403, 'GatedRepo', `Access to model ${repo.id} is restricted and you are not in the authorized list. Visit ${hubUrl}/${repo.id} to ask for access.`);
  }

  function sendTree(res: ServerResponse, url: URL, rev: Revision, dir: string): void {
    const recursive = isTrue(url.searchParams.get('recursive'));
    const expand = isTrue(url.searchParams.get('expand'));
    if (!rev.dirs.has(dir)) throw new HubError(404, 'EntryNotFound', `${dir} does not exist on "${rev.name}"`, { 'X-Repo-Commit': rev.commit });
    const paths = recursive ? listRecursive(rev, dir) : rev.dirs.get(dir)!;
    const start = Number(url.searchParams.get('cursor') ?? '0');
    const page = paths.slice(start, start + pageSize);
    if (start + pageSize < paths.length) {
      const next = new URL(`${hubUrl}${url.pathname}`);
      next.searchParams.set('recursive', String(recursive));
      next.searchParams.set('expand', String(expand));
      next.searchParams.set('cursor', String(start + pageSize));
      res.setHeader('Link', `<${next.href}>; rel="next"`);
    }
    sendJson(
      res,
      page.flatMap((path) => pathInfo(rev, path, expand)),
    );
  }

  function sendResolve(req: IncomingMessage, res: ServerResponse, repo: Repo, rev: Revision, path: string, raw: boolean): void {
    const entry = rev.files.get(path);
    if (!entry) throw new HubError(404, 'EntryNotFound', 'Entry not found', { 'X-Repo-Commit': rev.commit });
    res.setHeader('X-Repo-Commit', rev.commit);
    if (entry.lfs && !raw) {
      const location = `${cdnUrl}/cdn-lfs/${repo.id}/${entry.lfs.sha256}/${encodePath(path)}`;
      const body = Buffer.from(`Found. Redirecting to ${location}`);
      res.writeHead(302, {
        Location: location,
        ETag: `"${entry.oid}"`,
        'X-Linked-Etag': `"${entry.lfs.sha256}"`,
        'X-Linked-Size': String(entry.content.length),
        'Content-Type': 'text/plain; charset=utf-8',
        'Content-Length': String(body.length),
      });
      res.end(req.method === 'HEAD' ? undefined : body);
      return;
    }
    sendContent(req, res, repo.id, path, raw && entry.lfs ? entry.lfs.pointer : entry.content, `"${entry.oid}"`);
  }

  function sendCdn(req: IncomingMessage, res: ServerResponse, repoId: string, sha256: string, path: string): void {
    const content = byId.get(repoId)?.lfsBlobs.get(sha256);
    if (!content) {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end(req.method === 'HEAD' ? undefined : 'NoSuchKey');
      return;
    }
    res.setHeader('Content-Disposition', `inline; filename*=UTF-8''${encodeURIComponent(path.split('/').at(-1)!)}`);
    sendContent(req, res, repoId, path, content, `"${sha256}"`);
  }

  /** 200 or 206 for a `Range: bytes=…` (416 when unsatisfiable), honouring a pending cut. */
  function sendContent(req: IncomingMessage, res: ServerResponse, repoId: string, path: string, content: Buffer, etag: string): void {
    res.setHeader('ETag', etag);
    res.setHeader('Accept-Ranges', 'bytes');
    res.setHeader('Content-Type', 'application/octet-stream');
    const range = req.method === 'GET' ? parseRange(req.headers.range, content.length) : undefined;
    if (range === 'unsatisfiable') {
      res.writeHead(416, { 'Content-Range': `bytes */${content.length}`, 'Content-Length': '0' }).end();
      return;
    }
    const body = range ? content.subarray(range.start, range.end + 1) : content;
    if (range) res.setHeader('Content-Range', `bytes ${range.start}-${range.end}/${content.length}`);
    res.writeHead(range ? 206 : 200, { 'Content-Length': String(body.length) });
    if (req.method === 'HEAD') return void res.end();
    const key = cutKey(repoId, path);
    const cut = cuts.get(key);
    if (cut === undefined || body.length <= cut) return void res.end(body);
    cuts.delete(key);
    res.write(body.subarray(0, cut), () => res.socket?.destroy());
  }

  return {
    url: hubUrl,
    token,
    requests,
    commitOf(repo, revision) {
      const found = byId.get(repo);
      if (!found) throw new Error(`no repo ${repo} on the local hub`);
      return resolveRevision(found, revision).commit;
    },
    cutNext(repo, path, bytes) {
      cuts.set(cutKey(repo, path), bytes);
    },
    setOffline(value) {
      offline = value;
      if (value) for (const socket of sockets) socket.destroy();
    },
    close() {
      return new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      });
    },
  };
}

/** Files of a directory on disk (recursively), as HubFiles — e.g. the default model repository's qwen3-tiny version dir. */
export async function filesOf(dir: string): Promise<HubFile[]> {
  const names = (await readdir(dir, { recursive: true, withFileTypes: true })).filter((entry) => entry.isFile());
  const paths = names.map((entry) => relative(dir, join(entry.parentPath, entry.name)).split(sep).join('/')).sort();
  return Promise.all(paths.map(async (path) => ({ path, content: await readFile(join(dir, path)) })));
}

function buildRepo(repo: HubRepo): Repo {
  if (!/^[^/]+\/[^/]+$/.test(repo.id)) throw new Error(`repo id must be org/name, not ${repo.id}`);
  const lfsBlobs = new Map<string, Buffer>();
  const revisions = new Map<string, Revision>();
  for (const [name, files] of Object.entries(repo.revisions)) {
    const entries = new Map<string, Entry>();
    for (const file of [...files].sort((a, b) => (a.path < b.path ? -1 : 1))) {
      if (entries.has(file.path)) throw new Error(`${repo.id}@${name}: ${file.path} twice`);
      const entry = makeEntry(file);
      entries.set(file.path, entry);
      if (entry.lfs) lfsBlobs.set(entry.lfs.sha256, entry.content);
    }
    const listing = [...entries.values()].map((entry) => `${entry.path}\0${entry.oid}\n`).join('');
    const commit = sha1(`${repo.id}\n${name}\n${listing}`);
    revisions.set(name, { name, commit, files: entries, dirs: directories([...entries.keys()]) });
  }
  const byCommit = new Map([...revisions.values()].map((rev) => [rev.commit, rev]));
  return { id: repo.id, gated: repo.gated ?? false, revisions, byCommit, lfsBlobs };
}

function makeEntry(file: HubFile): Entry {
  const name = file.path.split('/').at(-1)!;
  const lfs = file.lfs ?? (file.content.length >= LFS_MIN_SIZE || name.includes('.onnx') || name.endsWith('.safetensors'));
  if (!lfs) return { path: file.path, content: file.content, oid: gitBlobSha1(file.content) };
  const sha256 = createHash('sha256').update(file.content).digest('hex');
  // The pointer git stores in the file's place (https://github.com/git-lfs/git-lfs/blob/main/docs/spec.md).
  const pointer = Buffer.from(`version https://git-lfs.github.com/spec/v1\noid sha256:${sha256}\nsize ${file.content.length}\n`);
  return { path: file.path, content: file.content, oid: gitBlobSha1(pointer), lfs: { sha256, pointer } };
}

/** Every directory ('' the root) → its direct children, directories first, each group by name. */
function directories(files: readonly string[]): Map<string, string[]> {
  const children = new Map<string, Set<string>>([['', new Set()]]);
  for (const file of files) {
    const parts = file.split('/');
    for (let i = 1; i <= parts.length; i++) {
      const parent = parts.slice(0, i - 1).join('/');
      const child = parts.slice(0, i).join('/');
      if (!children.has(parent)) children.set(parent, new Set());
      children.get(parent)!.add(child);
      if (i < parts.length && !children.has(child)) children.set(child, new Set());
    }
  }
  const dirs = new Map<string, string[]>();
  for (const [dir, set] of children) {
    const isDir = (path: string) => children.has(path);
    dirs.set(
      dir,
      [...set].sort((a, b) => Number(isDir(b)) - Number(isDir(a)) || (a < b ? -1 : a > b ? 1 : 0)),
    );
  }
  return dirs;
}

function listRecursive(rev: Revision, dir: string): string[] {
  return rev.dirs.get(dir)!.flatMap((child) => (rev.dirs.has(child) ? [child, ...listRecursive(rev, child)] : [child]));
}

function resolveRevision(repo: Repo, revision: string): Revision {
  const rev = repo.revisions.get(revision === 'HEAD' ? 'main' : revision) ?? repo.byCommit.get(revision);
  if (!rev) throw new HubError(404, 'RevisionNotFound', `Invalid rev id: ${revision}`);
  return rev;
}

/** A tree / paths-info entry: a file (with `lfs` for LFS files) or a directory; `expand` adds lastCommit and the scan. */
function pathInfo(rev: Revision, path: string, expand: boolean): object[] {
  const entry = rev.files.get(path);
  const lastCommit = expand ? { lastCommit: { id: rev.commit, title: `${rev.name}: upload`, date: DATE } } : {};
  if (!entry) {
    if (!rev.dirs.has(path) || path === '') return [];
    return [{ type: 'directory', oid: sha1(`tree ${path}\n${rev.dirs.get(path)!.join('\n')}\n${rev.commit}`), size: 0, path, ...lastCommit }];
  }
  return [
    {
      type: 'file',
      oid: entry.oid,
      size: entry.content.length,
      ...(entry.lfs ? { lfs: { oid: entry.lfs.sha256, size: entry.content.length, pointerSize: entry.lfs.pointer.length } } : {}),
      path,
      ...lastCommit,
      ...(expand ? { securityFileStatus: { status: 'safe', avScan: { virusFound: false, virusNames: null }, pickleImportScan: null } } : {}),
    },
  ];
}

/** The Hub's model record; with `expand=` only `_id`, `id` and the fields named. */
function modelInfo(repo: Repo, rev: Revision, query: URLSearchParams): Record<string, unknown> {
  const blobs = isTrue(query.get('blobs'));
  const files = [...rev.files.values()];
  const full: Record<string, unknown> = {
    _id: sha1(repo.id).slice(0, 24),
    id: repo.id,
    modelId: repo.id,
    author: repo.id.split('/')[0],
    sha: rev.commit,
    lastModified: DATE,
    createdAt: DATE,
    private: false,
    disabled: false,
    gated: repo.gated ? 'auto' : false,
    downloads: 0,
    downloadsAllTime: 0,
    likes: 0,
    tags: [],
    spaces: [],
    siblings: files.map((entry) =>
      blobs
        ? {
            rfilename: entry.path,
            size: entry.content.length,
            blobId: entry.oid,
            ...(entry.lfs ? { lfs: { sha256: entry.lfs.sha256, size: entry.content.length, pointerSize: entry.lfs.pointer.length } } : {}),
          }
        : { rfilename: entry.path },
    ),
    usedStorage: files.reduce((sum, entry) => sum + entry.content.length, 0),
  };
  const expand = query.getAll('expand');
  if (expand.length === 0) return full;
  return Object.fromEntries(Object.entries(full).filter(([key]) => key === '_id' || key === 'id' || expand.includes(key)));
}

async function readPathsInfoBody(req: IncomingMessage): Promise<{ paths: string[]; expand: boolean }> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  if ((req.headers['content-type'] ?? '').startsWith('application/json')) {
    const body = JSON.parse(text) as { paths?: unknown; expand?: unknown };
    const paths = Array.isArray(body.paths) ? body.paths.map(String) : typeof body.paths === 'string' ? [body.paths] : [];
    return { paths, expand: body.expand === true || isTrue(String(body.expand)) };
  }
  const form = new URLSearchParams(text);
  return { paths: form.getAll('paths'), expand: isTrue(form.get('expand')) };
}

function parseRange(header: string | undefined, size: number): { start: number; end: number } | 'unsatisfiable' | undefined {
  const match = header?.match(/^bytes=(\d*)-(\d*)$/);
  if (!match || (match[1] === '' && match[2] === '')) return undefined;
  let start: number;
  let end: number;
  if (match[1] === '') {
    start = Math.max(0, size - Number(match[2]));
    end = size - 1;
  } else {
    start = Number(match[1]);
    end = match[2] === '' ? size - 1 : Math.min(Number(match[2]), size - 1);
  }
  if (start >= size || start > end) return 'unsatisfiable';
  return { start, end };
}

function sendJson(res: ServerResponse, value: unknown): void {
  const body = Buffer.from(JSON.stringify(value));
  res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': String(body.length) }).end(body);
}

function sendError(req: IncomingMessage, res: ServerResponse, error: HubError): void {
  if (res.headersSent) return void res.socket?.destroy();
  const body = Buffer.from(JSON.stringify({ error: error.message }));
  res.writeHead(error.status, {
    ...error.headers,
    ...(error.code ? { 'X-Error-Code': error.code } : {}),
    'X-Error-Message': error.message,
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': String(body.length),
  });
  res.end(req.method === 'HEAD' ? undefined : body);
}

function bearer(req: IncomingMessage): string | undefined {
  const match = req.headers.authorization?.match(/^Bearer\s+(\S+)$/i);
  return match?.[1];
}

function isTrue(value: string | null | undefined): boolean {
  return value === 'true' || value === '1' || value === 'True';
}

function cutKey(repo: string, path: string): string {
  return `${repo}\0${path}`;
}

function encodePath(path: string): string {
  return path.split('/').map(encodeURIComponent).join('/');
}

function decodePath(pathname: string): string {
  try {
    return decodeURIComponent(pathname);
  } catch {
    return pathname;
  }
}

function gitBlobSha1(content: Buffer): string {
  return createHash('sha1').update(`blob ${content.length}\0`).update(content).digest('hex');
}

function sha1(text: string): string {
  return createHash('sha1').update(text).digest('hex');
}
