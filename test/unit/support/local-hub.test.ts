// The local Hugging Face Hub (test/support/local-hub.ts) over plain fetch: each endpoint, header and error the
// @huggingface/hub and huggingface_hub clients read, cut downloads and going offline. The clients themselves run
// against it in test/integration/local-hub-clients.test.ts.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { filesOf, type HubRepo, type LocalHub, startLocalHub } from '../../support/local-hub.js';

const CONFIG = Buffer.from('{"model_type": "qwen3"}\n');
const WEIGHTS = Buffer.from(Array.from({ length: 5000 }, (_, i) => i % 251));
const REPOS: readonly HubRepo[] = [
  {
    id: 'org/tiny',
    revisions: {
      main: [
        { path: 'config.json', content: CONFIG },
        { path: 'onnx/model.onnx', content: WEIGHTS },
        { path: 'onnx/model.onnx_data', content: Buffer.from('data') },
        { path: 'tokenizer.json', content: Buffer.from('{}') },
        { path: 'README.md', content: Buffer.from('# tiny\n') },
        { path: 'big.bin', content: Buffer.alloc(1 << 20, 7) },
        { path: 'small.safetensors', content: Buffer.from('st') },
        { path: 'forced.txt', content: Buffer.from('text'), lfs: true },
      ],
      v1: [{ path: 'config.json', content: Buffer.from('{}') }],
    },
  },
  { id: 'org/gated', gated: true, revisions: { main: [{ path: 'config.json', content: CONFIG }] } },
];

let hub: LocalHub;
beforeAll(async () => {
  hub = await startLocalHub(REPOS, { treePageSize: 3 });
});
afterAll(() => hub.close());

const get = (path: string, init?: RequestInit) => fetch(`${hub.url}${path}`, init);
const json = async (path: string, init?: RequestInit) => {
  const res = await get(path, init);
  expect(res.status, path).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  return (await res.json()) as Record<string, unknown>;
};
const auth = (token: string) => ({ headers: { Authorization: `Bearer ${token}` } });
const gitHashObject = (content: Buffer) => execFileSync('git', ['hash-object', '--stdin'], { input: content }).toString().trim();
const sha256 = (content: Buffer) => createHash('sha256').update(content).digest('hex');
const pointerOf = (content: Buffer) => Buffer.from(`version https://git-lfs.github.com/spec/v1\noid sha256:${sha256(content)}\nsize ${content.length}\n`);

/** Every entry of a tree listing, following `Link: rel="next"`, and how many pages it took. */
async function listTree(path: string): Promise<{ entries: Record<string, unknown>[]; pages: number }> {
  const entries: Record<string, unknown>[] = [];
  let url: string | undefined = `${hub.url}${path}`;
  let pages = 0;
  while (url) {
    const res: Response = await fetch(url);
    expect(res.status).toBe(200);
    entries.push(...((await res.json()) as Record<string, unknown>[]));
    pages++;
    url = res.headers.get('link')?.match(/^<(http[^>]+)>; rel="next"$/)?.[1];
  }
  return { entries, pages };
}

describe('commits', () => {
  it('are 40-hex, one per revision, and the same for the same repos', async () => {
    const main = hub.commitOf('org/tiny', 'main');
    expect(main).toMatch(/^[0-9a-f]{40}$/);
    expect(hub.commitOf('org/tiny', 'v1')).not.toBe(main);
    expect(hub.commitOf('org/tiny', main)).toBe(main);
    const again = await startLocalHub(REPOS);
    try {
      expect(again.commitOf('org/tiny', 'main')).toBe(main);
    } finally {
      await again.close();
    }
    const changed = await startLocalHub([{ id: 'org/tiny', revisions: { main: [{ path: 'config.json', content: Buffer.from('{"x": 1}') }] } }]);
    try {
      expect(changed.commitOf('org/tiny', 'main')).not.toBe(main);
    } finally {
      await changed.close();
    }
    expect(() => hub.commitOf('org/none', 'main')).toThrow();
  });
});

describe('model info', () => {
  it('answers the whole record at the default branch, a branch, HEAD and a commit', async () => {
    const info = await json('/api/models/org/tiny');
    expect(info).toMatchObject({ id: 'org/tiny', sha: hub.commitOf('org/tiny', 'main'), private: false, gated: false });
    expect(info._id).toMatch(/^[0-9a-f]{24}$/);
    expect((info.siblings as { rfilename: string }[]).map((s) => s.rfilename)).toContain('onnx/model.onnx');
    expect(await json('/api/models/org/tiny/revision/v1')).toMatchObject({ sha: hub.commitOf('org/tiny', 'v1'), siblings: [{ rfilename: 'config.json' }] });
    expect((await json('/api/models/org/tiny/revision/HEAD')).sha).toBe(info.sha);
    expect((await json(`/api/models/org/tiny/revision/${info.sha}`)).sha).toBe(info.sha);
  });

  it('describes each sibling with blobs=true', async () => {
    const siblings = (await json('/api/models/org/tiny/revision/main?blobs=true')).siblings as Record<string, unknown>[];
    expect(siblings.find((s) => s.rfilename === 'config.json')).toEqual({ rfilename: 'config.json', size: CONFIG.length, blobId: gitHashObject(CONFIG) });
    expect(siblings.find((s) => s.rfilename === 'onnx/model.onnx')).toEqual({
      rfilename: 'onnx/model.onnx',
      size: WEIGHTS.length,
      blobId: gitHashObject(pointerOf(WEIGHTS)),
      lfs: { sha256: sha256(WEIGHTS), size: WEIGHTS.length, pointerSize: pointerOf(WEIGHTS).length },
    });
  });

  it('answers only _id, id and the fields named by expand', async () => {
    const info = await json('/api/models/org/gated/revision/main?expand=sha&expand=gated&expand=private');
    expect(Object.keys(info).sort()).toEqual(['_id', 'gated', 'id', 'private', 'sha']);
    expect(info.gated).toBe('auto');
  });
});

describe('tree', () => {
  it('lists recursively over pages: directories, files, LFS pointers and git blob ids', async () => {
    const { entries, pages } = await listTree('/api/models/org/tiny/tree/main?recursive=true&expand=false');
    expect(pages).toBe(3);
    expect(entries.map((e) => `${e.type} ${e.path}`)).toEqual([
      'directory onnx',
      'file onnx/model.onnx',
      'file onnx/model.onnx_data',
      'file README.md',
      'file big.bin',
      'file config.json',
      'file forced.txt',
      'file small.safetensors',
      'file tokenizer.json',
    ]);
    const byPath = new Map(entries.map((e) => [e.path, e]));
    expect(byPath.get('config.json')).toEqual({ type: 'file', oid: gitHashObject(CONFIG), size: CONFIG.length, path: 'config.json' });
    expect(byPath.get('onnx/model.onnx')).toEqual({
      type: 'file',
      oid: gitHashObject(pointerOf(WEIGHTS)),
      size: WEIGHTS.length,
      lfs: { oid: sha256(WEIGHTS), size: WEIGHTS.length, pointerSize: pointerOf(WEIGHTS).length },
      path: 'onnx/model.onnx',
    });
    // LFS by default: *.onnx*, *.safetensors, 1 MiB and more; or when asked.
    for (const lfs of ['onnx/model.onnx_data', 'small.safetensors', 'big.bin', 'forced.txt']) expect(byPath.get(lfs)!.lfs, lfs).toBeDefined();
    for (const plain of ['README.md', 'tokenizer.json']) expect(byPath.get(plain)!.lfs, plain).toBeUndefined();
    expect(byPath.get('onnx')).toMatchObject({ type: 'directory', size: 0, oid: expect.stringMatching(/^[0-9a-f]{40}$/) });
  });

  it('lists one directory without recursion, adds lastCommit with expand, and answers 404 for a missing one', async () => {
    expect((await listTree('/api/models/org/tiny/tree/main?recursive=false&expand=false')).entries.map((e) => e.path)).toEqual([
      'onnx',
      'README.md',
      'big.bin',
      'config.json',
      'forced.txt',
      'small.safetensors',
      'tokenizer.json',
    ]);
    const { entries } = await listTree('/api/models/org/tiny/tree/main/onnx?recursive=false&expand=true');
    expect(entries.map((e) => e.path)).toEqual(['onnx/model.onnx', 'onnx/model.onnx_data']);
    expect(entries[0]).toMatchObject({ lastCommit: { id: hub.commitOf('org/tiny', 'main'), date: expect.any(String), title: expect.any(String) }, securityFileStatus: { status: 'safe' } });
    // huggingface_hub quotes the path as one segment.
    expect((await listTree(`/api/models/org/tiny/tree/${hub.commitOf('org/tiny', 'main')}/onnx?recursive=true`)).entries).toHaveLength(2);
    const missing = await get('/api/models/org/tiny/tree/main/nope');
    expect(missing.status).toBe(404);
    expect(missing.headers.get('x-error-code')).toBe('EntryNotFound');
  });
});

describe('paths-info', () => {
  it('answers the paths that exist, from JSON (the JS client) or a form (huggingface_hub)', async () => {
    const body = JSON.stringify({ paths: ['onnx/model.onnx', 'missing.txt', 'onnx'], expand: true });
    const res = await get('/api/models/org/tiny/paths-info/main', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body });
    expect(res.status).toBe(200);
    const entries = (await res.json()) as Record<string, unknown>[];
    expect(entries.map((e) => `${e.type} ${e.path}`)).toEqual(['file onnx/model.onnx', 'directory onnx']);
    expect(entries[0]).toMatchObject({ lfs: { oid: sha256(WEIGHTS) }, lastCommit: { id: hub.commitOf('org/tiny', 'main') } });
    const form = await get('/api/models/org/tiny/paths-info/v1', { method: 'POST', body: new URLSearchParams([['paths', 'config.json']]) });
    expect(await form.json()).toEqual([{ type: 'file', oid: gitHashObject(Buffer.from('{}')), size: 2, path: 'config.json' }]);
  });
});

describe('resolve', () => {
  it('serves a small file with its commit, git blob ETag, length and ranges, and no xet headers', async () => {
    const commit = hub.commitOf('org/tiny', 'main');
    const head = await get('/org/tiny/resolve/main/config.json', { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('x-repo-commit')).toBe(commit);
    expect(head.headers.get('etag')).toBe(`"${gitHashObject(CONFIG)}"`);
    expect(head.headers.get('content-length')).toBe(String(CONFIG.length));
    expect(head.headers.get('accept-ranges')).toBe('bytes');
    expect([...head.headers.keys()].filter((name) => name.startsWith('x-xet') || name === 'link')).toEqual([]);
    expect(Buffer.from(await (await get(`/org/tiny/resolve/${commit}/config.json`)).arrayBuffer())).toEqual(CONFIG);

    const part = await get('/org/tiny/resolve/main/config.json', { headers: { Range: 'bytes=2-5' } });
    expect(part.status).toBe(206);
    expect(part.headers.get('content-range')).toBe(`bytes 2-5/${CONFIG.length}`);
    expect(Buffer.from(await part.arrayBuffer())).toEqual(CONFIG.subarray(2, 6));
    const tail = await get('/org/tiny/resolve/main/config.json', { headers: { Range: 'bytes=10-' } });
    expect(Buffer.from(await tail.arrayBuffer())).toEqual(CONFIG.subarray(10));
    const beyond = await get('/org/tiny/resolve/main/config.json', { headers: { Range: `bytes=${CONFIG.length}-` } });
    expect(beyond.status).toBe(416);
    expect(beyond.headers.get('content-range')).toBe(`bytes */${CONFIG.length}`);
  });

  it('redirects an LFS file to the CDN host with X-Linked-Etag and X-Linked-Size; the CDN serves ranges', async () => {
    const res = await get('/org/tiny/resolve/main/onnx/model.onnx', { method: 'HEAD', redirect: 'manual' });
    expect(res.status).toBe(302);
    expect(res.headers.get('x-repo-commit')).toBe(hub.commitOf('org/tiny', 'main'));
    expect(res.headers.get('x-linked-etag')).toBe(`"${sha256(WEIGHTS)}"`);
    expect(res.headers.get('x-linked-size')).toBe(String(WEIGHTS.length));
    expect(res.headers.get('etag')).toBe(`"${gitHashObject(pointerOf(WEIGHTS))}"`);
    const location = new URL(res.headers.get('location')!);
    // Another host name for the same server, so huggingface_hub treats it as a CDN (and drops the token).
    expect(location.hostname).toBe('localhost');
    expect(location.port).toBe(new URL(hub.url).port);

    const followed = await get('/org/tiny/resolve/main/onnx/model.onnx');
    expect(followed.status).toBe(200);
    expect(followed.headers.get('etag')).toBe(`"${sha256(WEIGHTS)}"`);
    expect(Buffer.from(await followed.arrayBuffer())).toEqual(WEIGHTS);
    const probe = await get('/org/tiny/resolve/main/onnx/model.onnx', { headers: { Range: 'bytes=0-0' } });
    expect(probe.status).toBe(206);
    expect(probe.headers.get('content-range')).toBe(`bytes 0-0/${WEIGHTS.length}`);
    expect(Buffer.from(await probe.arrayBuffer())).toEqual(WEIGHTS.subarray(0, 1));
  });

  it('serves the LFS pointer under raw/', async () => {
    const res = await get('/org/tiny/raw/main/onnx/model.onnx');
    expect(res.status).toBe(200);
    expect(Buffer.from(await res.arrayBuffer())).toEqual(pointerOf(WEIGHTS));
  });
});

describe('errors', () => {
  const expectError = async (res: Response, status: number, code: string | null) => {
    expect(res.status).toBe(status);
    expect(res.headers.get('x-error-code')).toBe(code);
    expect(res.headers.get('x-error-message')).toBeTruthy();
    // A HEAD has the headers alone; a GET's JSON body repeats the message (what the JS client's createApiError reads).
    const body = await res.text();
    if (body) expect((JSON.parse(body) as { error: string }).error).toBe(res.headers.get('x-error-message'));
  };

  it('an unknown repo: 401 RepoNotFound anonymously, 404 with a token', async () => {
    await expectError(await get('/api/models/org/none'), 401, 'RepoNotFound');
    await expectError(await get('/org/none/resolve/main/config.json', { method: 'HEAD' }), 401, 'RepoNotFound');
    await expectError(await get('/api/models/org/none/tree/main', auth(hub.token)), 404, 'RepoNotFound');
  });

  it('a gated repo: info and tree for anyone, files only with the token', async () => {
    expect((await json('/api/models/org/gated')).gated).toBe('auto');
    expect((await listTree('/api/models/org/gated/tree/main?recursive=true')).entries).toHaveLength(1);
    await expectError(await get('/org/gated/resolve/main/config.json'), 401, 'GatedRepo');
    await expectError(await get('/org/gated/resolve/main/config.json', auth('hf_wrong')), 403, 'GatedRepo');
    const ok = await get('/org/gated/resolve/main/config.json', auth(hub.token));
    expect(ok.status).toBe(200);
    expect(Buffer.from(await ok.arrayBuffer())).toEqual(CONFIG);
  });

  it('a missing revision: 404 RevisionNotFound; a missing file: 404 EntryNotFound with the commit', async () => {
    await expectError(await get('/api/models/org/tiny/revision/v9'), 404, 'RevisionNotFound');
    await expectError(await get('/org/tiny/resolve/v9/config.json', { method: 'HEAD' }), 404, 'RevisionNotFound');
    await expectError(await get('/api/models/org/tiny/tree/v9?recursive=true'), 404, 'RevisionNotFound');
    const missing = await get('/org/tiny/resolve/main/nope.json');
    expect(missing.headers.get('x-repo-commit')).toBe(hub.commitOf('org/tiny', 'main'));
    await expectError(missing, 404, 'EntryNotFound');
  });
});

describe('failures the tests inject', () => {
  it('cutNext: the next GET of the file sends the first bytes and drops the connection; a short probe passes', async () => {
    hub.cutNext('org/tiny', 'onnx/model.onnx', 1000);
    const probe = await get('/org/tiny/resolve/main/onnx/model.onnx', { headers: { Range: 'bytes=0-0' } });
    expect(probe.status).toBe(206);
    await probe.arrayBuffer();
    const cut = await get('/org/tiny/resolve/main/onnx/model.onnx');
    expect(cut.headers.get('content-length')).toBe(String(WEIGHTS.length));
    await expect(cut.arrayBuffer()).rejects.toThrow();
    const resumed = await get('/org/tiny/resolve/main/onnx/model.onnx', { headers: { Range: 'bytes=1000-' } });
    expect(resumed.status).toBe(206);
    expect(Buffer.from(await resumed.arrayBuffer())).toEqual(WEIGHTS.subarray(1000));
    expect(hub.requests.filter((r) => r.path === `/cdn-lfs/org/tiny/${sha256(WEIGHTS)}/onnx/model.onnx`).map((r) => r.range)).toEqual(expect.arrayContaining(['bytes=0-0', undefined, 'bytes=1000-']));

    hub.cutNext('org/tiny', 'config.json', 5);
    await expect((await get('/org/tiny/resolve/main/config.json')).arrayBuffer()).rejects.toThrow();
    expect(Buffer.from(await (await get('/org/tiny/resolve/main/config.json')).arrayBuffer())).toEqual(CONFIG);
  });

  it('setOffline: every request fails at the network level until it is back', async () => {
    hub.setOffline(true);
    await expect(get('/api/models/org/tiny')).rejects.toThrow();
    await expect(get('/org/tiny/resolve/main/config.json')).rejects.toThrow();
    hub.setOffline(false);
    expect((await json('/api/models/org/tiny')).id).toBe('org/tiny');
  });

  it('records each request with its method, decoded path and range', async () => {
    const before = hub.requests.length;
    await (await get('/org/tiny/resolve/main/onnx%2Fmodel.onnx_data', { headers: { Range: 'bytes=0-1' } })).arrayBuffer();
    expect(hub.requests.slice(before)).toEqual([
      { method: 'GET', path: '/org/tiny/resolve/main/onnx/model.onnx_data', range: 'bytes=0-1' },
      expect.objectContaining({ method: 'GET', range: 'bytes=0-1' }),
    ]);
  });
});

describe('filesOf', () => {
  it('reads a directory recursively into repo-relative posix paths', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'conveyor-local-hub-'));
    try {
      await mkdir(join(dir, 'onnx', 'deep'), { recursive: true });
      await writeFile(join(dir, 'config.json'), CONFIG);
      await writeFile(join(dir, 'onnx', 'deep', 'model.onnx'), WEIGHTS);
      const files = await filesOf(dir);
      expect(files.map((f) => f.path)).toEqual(['config.json', 'onnx/deep/model.onnx']);
      expect(files[1]!.content).toEqual(WEIGHTS);
      expect(files[1]!.lfs).toBeUndefined();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
