// Models by name (issue 33): the real CLI against the local Hub (test/support/local-hub.ts), each
// run with its own HF_HOME. An ONNX repository (the default model's q4 export) is pulled, then
// served and chatted with as `org/tiny-onnx`; the same cache is served with HF_HUB_OFFLINE=1 while
// the Hub is down; a safetensors checkpoint of the same model is served by name (converted once,
// reused by the next start); a cut download resumes with a Range request; every failure exits 1
// naming the repository; a config.pbtxt's hf_model loads by name; and a cache Python's
// huggingface_hub filled is served offline.
import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeQwen3Checkpoint } from '../../models/qwen3/checkpoint.js';
import { DECODER_CONFIGS } from '../../models/qwen3/config.js';
import { initDecoderWeights } from '../../models/qwen3/weights.js';
import { type CliServer, killCliServer, SOURCE_CLI, startCliServer } from '../support/cli-server.js';
import { hfPython } from '../support/hf-python.js';
import { filesOf, type HubFile, type LocalHub, startLocalHub } from '../support/local-hub.js';

const run = promisify(execFile);
const ONNX_DIR = 'models/repository/qwen3-tiny/1';
const ONNX_FILES = ['config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json', 'onnx/model_q4.onnx'];

let hub: LocalHub;
let scratch: string;
let homes = 0;
let onnxFiles: HubFile[];

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'conveyor-hub-models-'));
  onnxFiles = (await filesOf(ONNX_DIR)).filter((file) => ONNX_FILES.includes(file.path));
  const checkpoint = join(scratch, 'checkpoint');
  await writeQwen3Checkpoint(checkpoint, DECODER_CONFIGS.tiny, initDecoderWeights(DECODER_CONFIGS.tiny), { shards: 2 });
  hub = await startLocalHub([
    { id: 'org/tiny-onnx', revisions: { main: onnxFiles, v1: onnxFiles } },
    { id: 'org/tiny-st', revisions: { main: await filesOf(checkpoint) } },
    { id: 'org/gated', gated: true, revisions: { main: onnxFiles } },
  ]);
});
afterAll(async () => {
  await hub?.close();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

/** A fresh HF_HOME and the environment that points the CLI at it and at the local Hub. */
function environment(extra: Record<string, string> = {}, home = join(scratch, `home-${homes++}`)): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, HF_HOME: home, HF_ENDPOINT: hub.url, ...extra };
  for (const key of ['HF_TOKEN', 'HF_HUB_CACHE', 'HF_HUB_OFFLINE', 'HUGGINGFACE_HUB_CACHE']) if (!(key in extra)) delete env[key];
  return env;
}

function cli(args: readonly string[], env: NodeJS.ProcessEnv): Promise<{ code: number; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [...SOURCE_CLI.entry, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env });
  let [stdout, stderr] = ['', ''];
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr })));
}

async function serving(model: string, env: NodeJS.ProcessEnv, check: (server: CliServer) => Promise<void>, args: readonly string[] = []): Promise<CliServer> {
  const server = await startCliServer({ model }, ['--log-level', 'info', ...args], { ...SOURCE_CLI, env });
  try {
    await server.waitForLog(/version 1 READY/);
    await check(server);
    server.signal('SIGTERM');
    expect(await server.exited).toBe(0);
    return server;
  } finally {
    await killCliServer(server);
  }
}

async function chat(server: CliServer, model: string): Promise<string> {
  const client = new OpenAI({ baseURL: `${server.http}/v1`, apiKey: 'unused', maxRetries: 0 });
  const reply = await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'Hello' }], max_tokens: 6, temperature: 0 });
  expect(reply.model).toBe(model);
  return reply.choices[0]!.message.content ?? '';
}

const sha256 = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

describe('conveyor pull and serve --model ORG/NAME (local Hub)', () => {
  it('pulls an ONNX repository, serves it as org/tiny-onnx with its source on the card, then serves the cache offline', async () => {
    const env = environment();
    const pulled = await cli(['pull', 'org/tiny-onnx'], env);
    expect(pulled.stderr).toContain('org/tiny-onnx: fetched onnx/model_q4.onnx');
    expect(pulled.code).toBe(0);
    const commit = hub.commitOf('org/tiny-onnx', 'main');
    expect(pulled.stdout.trim()).toBe(join(env['HF_HOME']!, 'hub', 'models--org--tiny-onnx', 'snapshots', commit));
    expect((await readFile(join(env['HF_HOME']!, 'hub', 'models--org--tiny-onnx', 'refs', 'main'), 'utf8')).trim()).toBe(commit);
    // Only what serving needs: no other variant.
    expect(hub.requests.some((r) => r.path.includes('model_fp16'))).toBe(false);

    let online = '';
    await serving('org/tiny-onnx', env, async (server) => {
      online = await chat(server, 'org/tiny-onnx');
      const { data } = (await (await fetch(`${server.http}/v1/models`)).json()) as { data: Record<string, unknown>[] };
      expect(data).toEqual([expect.objectContaining({ id: 'org/tiny-onnx', hf_repo: 'org/tiny-onnx', revision: 'main', commit, precision: 'q4' })]);
      // KServe names it org--tiny-onnx (a URL path cannot carry the slash); %2F reaches it too.
      expect((await fetch(`${server.http}/v2/models/org--tiny-onnx/ready`)).status).toBe(200);
      expect((await fetch(`${server.http}/v2/models/org%2Ftiny-onnx/ready`)).status).toBe(200);
    });

    hub.setOffline(true);
    try {
      await serving('org/tiny-onnx', { ...env, HF_HUB_OFFLINE: '1' }, async (server) => expect(await chat(server, 'org/tiny-onnx')).toBe(online));
    } finally {
      hub.setOffline(false);
    }
  });

  it('serves a safetensors checkpoint by name: converted once into the cache, reused by the next start', async () => {
    const env = environment();
    const first = await serving('org/tiny-st', env, async (server) => void (await chat(server, 'org/tiny-st')));
    expect(first.lines.some((line) => /org\/tiny-st: converting the safetensors checkpoint/.test(line.msg))).toBe(true);
    const commit = hub.commitOf('org/tiny-st', 'main');
    expect(existsSync(join(env['HF_HOME']!, 'conveyor', 'converted', 'org--tiny-st', commit))).toBe(true);
    const second = await serving('org/tiny-st', env, async (server) => void (await chat(server, 'org/tiny-st')));
    expect(second.lines.some((line) => /converting/.test(line.msg))).toBe(false);
    expect(second.lines.some((line) => /using the checkpoint converted before/.test(line.msg))).toBe(true);
  });

  it('resumes a cut download with a Range request, and the blob has the right hash', async () => {
    const env = environment();
    const file = onnxFiles.find((f) => f.path === 'onnx/model_q4.onnx')!;
    hub.cutNext('org/tiny-onnx', file.path, 3_000_000);
    const cut = await cli(['pull', 'org/tiny-onnx'], env);
    expect(cut.code).toBe(1);
    expect(cut.stderr).toMatch(/org\/tiny-onnx: the download of onnx\/model_q4.onnx was cut .*run the same command again/);
    const before = hub.requests.length;
    const resumed = await cli(['pull', 'org/tiny-onnx'], env);
    expect(resumed.code).toBe(0);
    expect(resumed.stderr).toMatch(/fetched onnx\/model_q4.onnx \(.*resumed at/);
    const ranges = hub.requests.slice(before).filter((r) => r.path.endsWith('model_q4.onnx') && r.range !== undefined && r.range !== 'bytes=0-0');
    expect(ranges.length).toBeGreaterThan(0);
    expect(Number(/bytes=(\d+)-/.exec(ranges[0]!.range!)![1])).toBeGreaterThan(0);
    const blob = join(env['HF_HOME']!, 'hub', 'models--org--tiny-onnx', 'blobs', sha256(file.content));
    expect(sha256(await readFile(blob))).toBe(sha256(file.content));
  });

  it('fails with exit 1 and a message naming the repository: unknown, gated, missing revision, missing variant, Hub down', async () => {
    const env = environment();
    const failures: [readonly string[], RegExp, NodeJS.ProcessEnv?][] = [
      [['pull', 'org/nope'], /org\/nope: no such model repository/],
      [['pull', 'org/gated'], /org\/gated: the Hub refused access \(HTTP 401.*HF_TOKEN/],
      [['pull', 'org/gated'], /org\/gated: the Hub refused access \(HTTP 403/, { ...env, HF_TOKEN: 'hf_wrong' }],
      [['pull', 'org/tiny-onnx@v9'], /org\/tiny-onnx: no revision 'v9'/],
      [['pull', 'org/tiny-onnx', '--precision', 'fp16'], /org\/tiny-onnx .* has no onnx\/model_fp16.onnx for --precision fp16 \(onnx\/ holds model_q4.onnx\)/],
      [['serve', '--model', 'org/nope', '--http-port', '0', '--grpc-port', '0', '--metrics-port', '0'], /org\/nope: no such model repository/],
      [['pull', 'org/tiny-onnx@v1'], /org\/tiny-onnx@v1: HF_HUB_OFFLINE=1 and no ref 'v1' of it in the cache/, { ...env, HF_HUB_OFFLINE: '1' }],
    ];
    for (const [args, message, withEnv] of failures) {
      const { code, stderr } = await cli(args, withEnv ?? env);
      expect(stderr, args.join(' ')).toMatch(message);
      expect(code, args.join(' ')).toBe(1);
    }
    hub.setOffline(true);
    try {
      const down = await cli(['pull', 'org/tiny-onnx'], { ...env, HF_HUB_ETAG_TIMEOUT: '1' });
      expect(down.stderr).toMatch(/org\/tiny-onnx: cannot reach the Hub .*HF_HUB_OFFLINE=1/);
      expect(down.code).toBe(1);
    } finally {
      hub.setOffline(false);
    }
    // Nothing half-written: no ref, no snapshot a later offline start would take.
    expect(existsSync(join(env['HF_HOME']!, 'hub', 'models--org--gated', 'refs', 'main'))).toBe(false);
    const granted = await cli(['pull', 'org/gated'], { ...env, HF_TOKEN: hub.token });
    expect(granted.code).toBe(0);
    expect((await cli(['pull', 'org/gated', '--hf-token', hub.token], { ...env, HF_HUB_OFFLINE: '1' })).code).toBe(0);
  });

  it("loads a repository model by name from its config.pbtxt's hf_model, and reports a bad one in the index", async () => {
    const env = environment();
    const repository = join(scratch, 'repository');
    const config = (name: string, hfModel: string) =>
      `name: "${name}"\nbackend: "llm"\nmax_batch_size: 0\nmodel_transaction_policy { decoupled: true }\ninstance_group [ { count: 1 kind: KIND_CPU } ]\nparameters: { key: "hf_model" value: { string_value: "${hfModel}" } }\n`;
    for (const [name, hfModel] of [
      ['by-name', 'org/tiny-onnx@v1'],
      ['missing', 'org/nope'],
    ] as const) {
      await mkdir(join(repository, name), { recursive: true });
      await writeFile(join(repository, name, 'config.pbtxt'), config(name, hfModel));
    }
    const server = await startCliServer(repository, ['--model-control-mode', 'explicit'], { ...SOURCE_CLI, env });
    try {
      const load = (name: string) => fetch(`${server.http}/v2/repository/models/${name}/load`, { method: 'POST' });
      expect((await load('by-name')).status).toBe(200);
      await chat(server, 'by-name');
      const { data } = (await (await fetch(`${server.http}/v1/models`)).json()) as { data: Record<string, unknown>[] };
      expect(data).toEqual([expect.objectContaining({ id: 'by-name', hf_repo: 'org/tiny-onnx', revision: 'v1', commit: hub.commitOf('org/tiny-onnx', 'v1') })]);
      expect((await load('missing')).status).toBe(400);
      const index = (await (await fetch(`${server.http}/v2/repository/index`, { method: 'POST' })).json()) as { name: string; state: string; reason: string }[];
      expect(index.find((row) => row.name === 'missing')).toEqual(expect.objectContaining({ state: 'UNAVAILABLE', reason: expect.stringMatching(/org\/nope: no such model repository/) }));
    } finally {
      await killCliServer(server);
    }
  });

  it("serves offline a cache that Python's huggingface_hub filled from the same Hub", async () => {
    const python = await hfPython();
    if ('skip' in python) {
      console.log(`skipped: ${python.skip}`);
      return;
    }
    const env = environment();
    const script = "from huggingface_hub import snapshot_download; print(snapshot_download('org/tiny-onnx'))";
    const { stdout } = await run(python.python, ['-c', script], { env: { ...env, HF_HUB_DISABLE_PROGRESS_BARS: '1', HF_HUB_DISABLE_XET: '1' } });
    expect(stdout.trim()).toBe(join(env['HF_HOME']!, 'hub', 'models--org--tiny-onnx', 'snapshots', hub.commitOf('org/tiny-onnx', 'main')));
    hub.setOffline(true);
    try {
      await serving('org/tiny-onnx', { ...env, HF_HUB_OFFLINE: '1' }, async (server) => void (await chat(server, 'org/tiny-onnx')));
    } finally {
      hub.setOffline(false);
    }
  });
});
