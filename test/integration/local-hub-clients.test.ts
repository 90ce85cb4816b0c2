// The real clients against the local Hub (test/support/local-hub.ts): Python's huggingface_hub (the hfPython() venv)
// downloads snapshots into the HF cache layout, is refused a gated repo without the token, tells the Hub's errors
// apart and resumes a cut download with a Range request; the JS client (@huggingface/hub, what `conveyor pull` uses)
// lists, describes and downloads the same repos into the same layout, blob for blob.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { lstat, mkdtemp, readdir, readFile, readlink, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hfPython } from '../support/hf-python.js';
import { type HubFile, type HubRepo, type LocalHub, startLocalHub } from '../support/local-hub.js';

const run = promisify(execFile);

const FILES: readonly HubFile[] = [
  { path: 'config.json', content: Buffer.from('{"model_type": "qwen3"}\n') },
  { path: 'tokenizer.json', content: Buffer.from('{"version": "1.0"}\n') },
  { path: 'onnx/model.onnx', content: Buffer.from(Array.from({ length: 300_000 }, (_, i) => (i * 7) % 256)) },
  { path: 'onnx/model.onnx_data', content: Buffer.alloc(70_000, 3) },
];
/** huggingface_hub reads a download in 10 MiB pieces (constants.DOWNLOAD_CHUNK_SIZE) and resumes after the last whole one. */
const PIECE = 10 * 1024 * 1024;
const BIG: HubFile = { path: 'model.safetensors', content: Buffer.from(Array.from({ length: PIECE + 50_000 }, (_, i) => (i * 13) % 256)) };
const REPOS: readonly HubRepo[] = [
  { id: 'org/tiny', revisions: { main: FILES, v1: [FILES[0]!] } },
  { id: 'org/gated', gated: true, revisions: { main: [FILES[0]!] } },
  { id: 'org/big', revisions: { main: [BIG] } },
];

let hub: LocalHub;
let scratch: string;
beforeAll(async () => {
  hub = await startLocalHub(REPOS, { treePageSize: 2 });
  scratch = await mkdtemp(join(tmpdir(), 'conveyor-local-hub-clients-'));
});
afterAll(async () => {
  await hub?.close();
  await rm(scratch, { recursive: true, force: true });
});

let caches = 0;
const newCache = () => join(scratch, `cache-${caches++}`);

/** The cache's repo folder as `path -> what it holds`: a ref's commit, a snapshot link's target, a blob's size. */
async function cacheLayout(cacheDir: string, repo: string): Promise<Record<string, string>> {
  const root = join(cacheDir, `models--${repo.replace('/', '--')}`);
  const layout: Record<string, string> = {};
  for (const entry of await readdir(root, { recursive: true, withFileTypes: true })) {
    const path = join(entry.parentPath, entry.name);
    const key = relative(root, path);
    if (entry.isSymbolicLink()) layout[key] = `-> ${await readlink(path)}`;
    else if (key.startsWith('refs/')) layout[key] = await readFile(path, 'utf8');
    else if (entry.isFile()) layout[key] = `${(await lstat(path)).size} bytes`;
  }
  return layout;
}

/** Each file of a revision's snapshot read through its link, against the hub's files. */
async function expectSnapshot(cacheDir: string, repo: string, revision: string, files: readonly HubFile[]): Promise<void> {
  const commit = hub.commitOf(repo, revision);
  const snapshot = join(cacheDir, `models--${repo.replace('/', '--')}`, 'snapshots', commit);
  for (const file of files) {
    const link = join(snapshot, file.path);
    expect((await lstat(link)).isSymbolicLink(), file.path).toBe(true);
    // Relative links into blobs/, named by the git blob sha1 (small files) or the sha256 (LFS).
    expect(resolve(join(link, '..'), await readlink(link))).toMatch(new RegExp(`/models--${repo.replace('/', '--')}/blobs/([0-9a-f]{40}|[0-9a-f]{64})$`));
    expect(await readFile(link), file.path).toEqual(file.content);
  }
}

// Python's huggingface_hub, one call per run: prints a JSON line with the result or the error's class.
const PYTHON = `
import json, sys
import huggingface_hub
from huggingface_hub import hf_hub_download, snapshot_download
call, kwargs = sys.argv[1], json.loads(sys.argv[2])
try:
    path = (snapshot_download if call == "snapshot" else hf_hub_download)(**kwargs)
    print(json.dumps({"path": path}))
except Exception as error:
    print(json.dumps({"error": type(error).__name__, "message": str(error)}))
`;

describe('huggingface_hub (Python)', async () => {
  const py = await hfPython();
  const skip = 'skip' in py ? py.skip : undefined;
  if (skip) console.log(`skipping the huggingface_hub checks: ${skip}`);
  const python = 'python' in py ? py.python : '';

  async function callPython(call: 'snapshot' | 'file', kwargs: Record<string, unknown>): Promise<{ path?: string; error?: string; message?: string }> {
    const env: NodeJS.ProcessEnv = { ...process.env, HF_ENDPOINT: hub.url, HF_HOME: join(scratch, 'hf-home'), HF_HUB_DISABLE_TELEMETRY: '1', HF_HUB_DISABLE_PROGRESS_BARS: '1' };
    delete env.HF_TOKEN;
    delete env.HF_HUB_OFFLINE;
    const { stdout } = await run(python, ['-c', PYTHON, call, JSON.stringify(kwargs)], { env, timeout: 120_000 });
    return JSON.parse(stdout.trim().split('\n').at(-1)!) as { path?: string; error?: string };
  }

  it.skipIf(skip)('snapshot_download writes blobs, refs and snapshot links for a branch and a tag', async () => {
    const cacheDir = newCache();
    const result = await callPython('snapshot', { repo_id: 'org/tiny', revision: 'main', cache_dir: cacheDir });
    expect(result.error).toBeUndefined();
    expect(result.path).toBe(join(cacheDir, 'models--org--tiny', 'snapshots', hub.commitOf('org/tiny', 'main')));
    await expectSnapshot(cacheDir, 'org/tiny', 'main', FILES);
    expect(await readFile(join(cacheDir, 'models--org--tiny', 'refs', 'main'), 'utf8')).toBe(hub.commitOf('org/tiny', 'main'));
    expect(await callPython('snapshot', { repo_id: 'org/tiny', revision: 'v1', cache_dir: cacheDir })).toEqual({ path: expect.any(String) });
    await expectSnapshot(cacheDir, 'org/tiny', 'v1', [FILES[0]!]);
    expect(await readFile(join(cacheDir, 'models--org--tiny', 'refs', 'v1'), 'utf8')).toBe(hub.commitOf('org/tiny', 'v1'));
    // Plain HTTP, no xet: the LFS files came from the CDN host.
    expect(hub.requests.some((r) => r.path.startsWith('/cdn-lfs/org/tiny/'))).toBe(true);
  });

  it.skipIf(skip)('a gated repo is refused without the token and with another one, and downloads with it', async () => {
    const cacheDir = newCache();
    expect(await callPython('snapshot', { repo_id: 'org/gated', cache_dir: cacheDir })).toMatchObject({ error: 'GatedRepoError' });
    expect(await callPython('snapshot', { repo_id: 'org/gated', cache_dir: cacheDir, token: 'hf_wrong' })).toMatchObject({ error: 'GatedRepoError' });
    expect(await callPython('snapshot', { repo_id: 'org/gated', cache_dir: cacheDir, token: hub.token })).toEqual({ path: expect.any(String) });
    await expectSnapshot(cacheDir, 'org/gated', 'main', [FILES[0]!]);
  });

  it.skipIf(skip)('the Hub errors reach it as their own exceptions', async () => {
    const cacheDir = newCache();
    expect(await callPython('snapshot', { repo_id: 'org/none', cache_dir: cacheDir })).toMatchObject({ error: 'RepositoryNotFoundError' });
    expect(await callPython('snapshot', { repo_id: 'org/tiny', revision: 'v9', cache_dir: cacheDir })).toMatchObject({ error: 'RevisionNotFoundError' });
    expect(await callPython('file', { repo_id: 'org/tiny', filename: 'nope.json', cache_dir: cacheDir })).toMatchObject({ error: 'RemoteEntryNotFoundError' });
    // The missing file is remembered under .no_exist/<commit>/ from the 404's X-Repo-Commit.
    expect(existsSync(join(cacheDir, 'models--org--tiny', '.no_exist', hub.commitOf('org/tiny', 'main'), 'nope.json'))).toBe(true);
  });

  it.skipIf(skip)('hf_hub_download resumes a cut download with a Range request after its last whole 10 MiB piece', async () => {
    const cdnGets = async (cut: number) => {
      const cacheDir = newCache();
      hub.cutNext('org/big', BIG.path, cut);
      const before = hub.requests.length;
      const result = await callPython('file', { repo_id: 'org/big', filename: BIG.path, cache_dir: cacheDir });
      expect(result.error).toBeUndefined();
      expect((await readFile(result.path!)).equals(BIG.content)).toBe(true);
      // 1.x downloads into a per-process temporary file and leaves nothing partial behind.
      expect((await readdir(join(cacheDir, 'models--org--big', 'blobs'))).filter((name) => name.includes('incomplete'))).toEqual([]);
      return hub.requests
        .slice(before)
        .filter((r) => r.method === 'GET' && r.path.startsWith('/cdn-lfs/'))
        .map((r) => r.range);
    };
    expect(await cdnGets(PIECE + 1000)).toEqual([undefined, `bytes=${PIECE}-`]);
    // Cut inside the first piece: nothing was kept, so the retry starts over.
    expect(await cdnGets(100_000)).toEqual([undefined, undefined]);
  });
});

/** What the tests use of @huggingface/hub (imported by name, so this file does not need it to typecheck). */
interface HubClient {
  snapshotDownload(params: { repo: string; revision?: string; cacheDir?: string; hubUrl?: string; accessToken?: string }): Promise<string>;
  downloadFileToCacheDir(params: { repo: string; path: string; revision?: string; cacheDir?: string; hubUrl?: string; accessToken?: string }): Promise<string>;
  listFiles(params: { repo: string; recursive?: boolean; revision?: string; hubUrl?: string }): AsyncGenerator<{ type: string; path: string; size: number; oid?: string; lfs?: { oid: string } }>;
  modelInfo(params: { name: string; revision?: string; hubUrl?: string; additionalFields?: string[] }): Promise<{ name: string; gated: unknown; sha?: string }>;
}

describe('@huggingface/hub (JS)', async () => {
  const specifier = '@huggingface/hub';
  const client = existsSync(join('node_modules', specifier, 'package.json')) ? ((await import(specifier)) as HubClient) : undefined;
  if (!client) console.log('skipping the @huggingface/hub checks: node_modules/@huggingface/hub is not installed');

  it.skipIf(!client)('modelInfo and listFiles read the info and follow the tree pages', async () => {
    const info = await client!.modelInfo({ name: 'org/tiny', revision: 'main', hubUrl: hub.url, additionalFields: ['sha'] });
    expect(info).toMatchObject({ name: 'org/tiny', gated: false, sha: hub.commitOf('org/tiny', 'main') });
    expect((await client!.modelInfo({ name: 'org/gated', hubUrl: hub.url })).gated).toBe('auto');
    const entries = [];
    for await (const entry of client!.listFiles({ repo: 'org/tiny', recursive: true, hubUrl: hub.url })) entries.push(entry);
    expect(entries.filter((e) => e.type === 'file').map((e) => e.path)).toEqual(['onnx/model.onnx', 'onnx/model.onnx_data', 'config.json', 'tokenizer.json']);
    expect(entries.find((e) => e.path === 'onnx/model.onnx')?.lfs?.oid).toMatch(/^[0-9a-f]{64}$/);
  });

  it.skipIf(!client)('snapshotDownload writes the layout huggingface_hub writes, blob for blob', async () => {
    const cacheDir = newCache();
    const snapshot = await client!.snapshotDownload({ repo: 'org/tiny', revision: 'main', cacheDir, hubUrl: hub.url });
    expect(snapshot).toBe(join(cacheDir, 'models--org--tiny', 'snapshots', hub.commitOf('org/tiny', 'main')));
    await expectSnapshot(cacheDir, 'org/tiny', 'main', FILES);
    expect(await readFile(join(cacheDir, 'models--org--tiny', 'refs', 'main'), 'utf8')).toBe(hub.commitOf('org/tiny', 'main'));

    const py = await hfPython();
    if ('skip' in py) return;
    const pyCache = newCache();
    const env = { ...process.env, HF_ENDPOINT: hub.url, HF_HOME: join(scratch, 'hf-home'), HF_HUB_DISABLE_TELEMETRY: '1', HF_HUB_DISABLE_PROGRESS_BARS: '1' };
    await run(py.python, ['-c', `from huggingface_hub import snapshot_download; snapshot_download("org/tiny", cache_dir=${JSON.stringify(pyCache)})`], { env, timeout: 120_000 });
    // trees/ is huggingface_hub's own cache of the tree listing; everything else is the same, blob names included.
    const layout = (dir: string) => cacheLayout(dir, 'org/tiny').then((l) => Object.fromEntries(Object.entries(l).filter(([key]) => !key.startsWith('trees/'))));
    expect(await layout(cacheDir)).toEqual(await layout(pyCache));
  });

  it.skipIf(!client)('downloadFileToCacheDir of a gated file needs the token; at a branch it lands in the commit snapshot', async () => {
    const cacheDir = newCache();
    await expect(client!.downloadFileToCacheDir({ repo: 'org/gated', path: 'config.json', cacheDir, hubUrl: hub.url })).rejects.toMatchObject({ statusCode: 401 });
    const path = await client!.downloadFileToCacheDir({ repo: 'org/gated', path: 'config.json', cacheDir, hubUrl: hub.url, accessToken: hub.token });
    expect(path).toBe(join(cacheDir, 'models--org--gated', 'snapshots', hub.commitOf('org/gated', 'main'), 'config.json'));
    expect(await readFile(path)).toEqual(FILES[0]!.content);
  });

  it.skipIf(!client)('a cut download rejects, and the next call downloads the whole file again', async () => {
    const cacheDir = newCache();
    const file = FILES[2]!;
    hub.cutNext('org/tiny', file.path, 1000);
    await expect(client!.downloadFileToCacheDir({ repo: 'org/tiny', path: file.path, cacheDir, hubUrl: hub.url })).rejects.toThrow();
    const before = hub.requests.length;
    const path = await client!.downloadFileToCacheDir({ repo: 'org/tiny', path: file.path, cacheDir, hubUrl: hub.url });
    expect(await readFile(path)).toEqual(file.content);
    // No resume: the client's probe, then the whole file.
    expect(
      hub.requests
        .slice(before)
        .filter((r) => r.method === 'GET' && r.path.startsWith('/cdn-lfs/'))
        .map((r) => r.range),
    ).toEqual(['bytes=0-0', undefined]);
  });

  it.skipIf(!client)('offline, every call rejects', async () => {
    hub.setOffline(true);
    try {
      await expect(client!.modelInfo({ name: 'org/tiny', hubUrl: hub.url })).rejects.toThrow();
      await expect(client!.snapshotDownload({ repo: 'org/tiny', cacheDir: newCache(), hubUrl: hub.url })).rejects.toThrow();
    } finally {
      hub.setOffline(false);
    }
  });
});
