// The Hugging Face cache layout, shared with Python's huggingface_hub:
//   <cache>/models--ORG--NAME/blobs/<etag>              file contents (LFS: the sha256; git: the blob id)
//   <cache>/models--ORG--NAME/refs/<revision>           the commit a branch or tag named when fetched
//   <cache>/models--ORG--NAME/snapshots/<commit>/<path> relative links to ../../blobs/<etag>
// A blob is written as <etag>.incomplete (resumed from its length on the next try), checked
// against the size and hash the Hub listed, and only then renamed and linked: a snapshot never
// holds a partial file. The ref is written once every file serving needs is linked.

import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { lstat, mkdir, readdir, readFile, rename, rm, stat, symlink, truncate, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { repoFolderName, type RepoFile } from './client.js';

/** The folder of `repo` in the cache. */
export function repoCacheDir(cacheDir: string, repo: string): string {
  return join(cacheDir, repoFolderName(repo));
}

export function snapshotDir(cacheDir: string, repo: string, commit: string): string {
  return join(repoCacheDir(cacheDir, repo), 'snapshots', commit);
}

/** The commit the cache's ref for `revision` holds, or undefined when it has none. */
export async function cachedRef(cacheDir: string, repo: string, revision: string): Promise<string | undefined> {
  const text = await readFile(join(repoCacheDir(cacheDir, repo), 'refs', revision), 'utf8').catch(() => undefined);
  const commit = text?.trim();
  return commit && /^[0-9a-f]{40}$/.test(commit) ? commit : undefined;
}

export async function writeRef(cacheDir: string, repo: string, revision: string, commit: string): Promise<void> {
  const path = join(repoCacheDir(cacheDir, repo), 'refs', revision);
  await mkdir(dirname(path), { recursive: true });
  const staging = `${path}.${process.pid}.tmp`;
  await writeFile(staging, commit);
  await rename(staging, path);
}

/** Every file a snapshot holds whose link resolves (relative paths, sorted): what an offline start may serve. */
export async function snapshotFiles(dir: string): Promise<string[]> {
  const found: string[] = [];
  const walk = async (at: string): Promise<void> => {
    for (const entry of await readdir(at, { withFileTypes: true }).catch(() => [])) {
      const full = join(at, entry.name);
      const info = await stat(full).catch(() => undefined);
      if (info?.isDirectory()) await walk(full);
      else if (info?.isFile()) found.push(relative(dir, full).split('\\').join('/'));
    }
  };
  await walk(dir);
  return found.sort();
}

/** Reports one file's bytes as they arrive (the progress display). */
export interface FileProgress {
  start(file: RepoFile, resumedFrom: number): void;
  advance(bytes: number): void;
  done(outcome: 'downloaded' | 'cached'): void;
}

/** Thrown when the bytes received differ from what the Hub listed; the partial blob is removed. */
export class CorruptDownloadError extends Error {}

/**
 * Makes `snapshots/<commit>/<file.path>` in the repository's cache folder, fetching its blob
 * unless the cache has it. `open(offset)` streams the file from `offset` (resuming a partial blob).
 */
export async function fetchIntoCache(repoDir: string, commit: string, file: RepoFile, open: (offset: number) => Promise<ReadableStream<Uint8Array>>, progress: FileProgress): Promise<string> {
  const pointer = join(repoDir, 'snapshots', commit, file.path);
  const blob = join(repoDir, 'blobs', file.blobName);
  if ((await stat(pointer).catch(() => undefined))?.size === file.size) {
    progress.start(file, file.size);
    progress.done('cached');
    return pointer;
  }
  await mkdir(dirname(blob), { recursive: true });
  if ((await stat(blob).catch(() => undefined))?.size !== file.size) await downloadBlob(blob, file, open, progress);
  else {
    progress.start(file, file.size);
    progress.done('cached');
  }
  await mkdir(dirname(pointer), { recursive: true });
  await rm(pointer, { force: true });
  await symlink(relative(dirname(pointer), blob), pointer);
  return pointer;
}

async function downloadBlob(blob: string, file: RepoFile, open: (offset: number) => Promise<ReadableStream<Uint8Array>>, progress: FileProgress): Promise<void> {
  const incomplete = `${blob}.incomplete`;
  let offset = (await lstat(incomplete).catch(() => undefined))?.size ?? 0;
  if (offset > file.size) {
    await truncate(incomplete, 0);
    offset = 0;
  }
  const hash = contentHash(file);
  // A resumed blob's hash covers the bytes already on disk too.
  if (offset > 0 && hash) for await (const chunk of createReadStream(incomplete, { end: offset - 1 })) hash.update(chunk as Buffer);
  progress.start(file, offset);
  if (offset < file.size) {
    const source = Readable.fromWeb((await open(offset)) as import('node:stream/web').ReadableStream<Uint8Array>);
    source.on('data', (chunk: Buffer) => {
      hash?.update(chunk);
      progress.advance(chunk.length);
    });
    await pipeline(source, createWriteStream(incomplete, { flags: offset > 0 ? 'a' : 'w' }));
  }
  const size = (await stat(incomplete)).size;
  const digest = hash?.digest('hex');
  const expected = file.sha256 ?? file.gitOid;
  if (size !== file.size || (digest !== undefined && digest !== expected)) {
    await rm(incomplete, { force: true });
    const what = size !== file.size ? `${size} bytes where the Hub lists ${file.size}` : `hash ${digest} where the Hub lists ${expected}`;
    throw new CorruptDownloadError(`${file.path}: received ${what}; the partial file was removed, run the same command again`);
  }
  await rename(incomplete, blob);
  progress.done('downloaded');
}

/** The hash the Hub lists for the file, seeded: sha256 of the content (LFS), or git's sha1 over `blob <size>\0` + content. */
function contentHash(file: RepoFile): ReturnType<typeof createHash> | undefined {
  if (file.sha256) return createHash('sha256');
  if (file.gitOid && /^[0-9a-f]{40}$/.test(file.gitOid)) return createHash('sha1').update(`blob ${file.size}\0`);
  return undefined;
}
