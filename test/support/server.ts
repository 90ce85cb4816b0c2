// Starts the real server in-process on loopback ports chosen by the OS, over a repository
// assembled for the test (config.pbtxt written by the test, weights linked from the built
// default repository so nothing is copied or rebuilt).
import { mkdtemp, mkdir, symlink, writeFile, copyFile } from 'node:fs/promises';
import { existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_REPOSITORY } from '../../models/default-repository.js';
import { parseServerOptions } from '../../src/config/server-options.js';
import { startServer, type RunningServer } from '../../src/main.js';

export interface TestModel {
  /** Name in the test repository. */
  readonly name: string;
  /** Default repository model whose version 1 (and labels) to link. */
  readonly from: string;
  readonly config: string;
  /** Version directories to create (default [1]). */
  readonly versions?: readonly number[];
}

export async function makeRepository(models: readonly TestModel[]): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'conveyor-repo-'));
  for (const model of models) await addModel(root, model);
  return root;
}

export async function addModel(root: string, model: TestModel): Promise<void> {
  const dir = join(root, model.name);
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'config.pbtxt'), model.config);
  for (const version of model.versions ?? [1]) {
    if (!existsSync(join(dir, String(version)))) await symlink(join(DEFAULT_REPOSITORY, model.from, '1'), join(dir, String(version)), 'dir');
  }
  const labels = join(DEFAULT_REPOSITORY, model.from, 'labels.txt');
  if (existsSync(labels)) await copyFile(labels, join(dir, 'labels.txt'));
}

export interface TestServer extends RunningServer {
  readonly http: string;
  readonly grpcAddress: string;
  readonly logs: string[];
}

export async function startTestServer(repository: string, args: readonly string[] = []): Promise<TestServer> {
  const logs: string[] = [];
  const options = parseServerOptions(['--model-repository', repository, '--host', '127.0.0.1', '--http-port', '0', '--grpc-port', '0', '--metrics-port', '0', ...args]);
  const server = await startServer(options, { log: (line) => logs.push(line) });
  return Object.assign(server, { http: `http://127.0.0.1:${server.httpPort}`, grpcAddress: `127.0.0.1:${server.grpcPort}`, logs });
}

/** The committed config of a default repository model, renamed, with `edit` applied. */
export function configOf(source: string, name: string, edit: (text: string) => string = (t) => t): string {
  const text = readFileSync(join(DEFAULT_REPOSITORY, source, 'config.pbtxt'), 'utf8');
  return edit(text.replace(`name: "${source}"`, `name: "${name}"`));
}

/** A config.pbtxt edit naming the attention backend: a test of what one backend does names it rather than leaning on the default. */
export const withAttentionBackend =
  (backend: string, edit: (text: string) => string = (t) => t) =>
  (text: string): string =>
    `${edit(text)}\nparameters: { key: "attention_backend" value: { string_value: "${backend}" } }\n`;

/** POST /v2/repository/models/{name}/load: the status and Triton's `error` text ('' on success). */
export async function loadModel(server: TestServer, name: string): Promise<{ status: number; error: string }> {
  const response = await fetch(`${server.http}/v2/repository/models/${name}/load`, { method: 'POST' });
  const text = await response.text();
  return { status: response.status, error: text === '' ? '' : (JSON.parse(text) as { error: string }).error };
}
