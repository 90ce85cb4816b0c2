// Readiness that tells the truth (issue 35): /v2/health/ready is 200 only once every model the
// server was asked to serve (--model, --load-model, the repository in none mode) is READY; one
// that failed to load, or that the repository does not hold, keeps it not ready (KServe's 400)
// with the reason in the repository index. --strict-readiness false keeps the old answer.
import { copyFile, mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_REPOSITORY } from '../../models/default-repository.js';
import { parseServerOptions } from '../../src/config/server-options.js';
import { startServer, type RunningServer } from '../../src/main.js';
import { configOf, makeRepository, startTestServer } from '../support/server.js';

const EXPORT = join(DEFAULT_REPOSITORY, 'qwen3-tiny', '1');
const running: RunningServer[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((s) => s.stop()));
});

/** A Hugging Face export whose tokenizer and config are fine and whose ONNX file is not a model. */
async function brokenExport(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'broken-export-'));
  await mkdir(join(dir, 'onnx'));
  for (const file of ['config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json']) await copyFile(join(EXPORT, file), join(dir, file));
  await writeFile(join(dir, 'onnx', 'model.onnx'), 'not an onnx model');
  return dir;
}

async function serve(args: readonly string[]): Promise<{ http: string }> {
  const options = parseServerOptions(['--host', '127.0.0.1', '--http-port', '0', '--grpc-port', '0', '--metrics-port', '0', ...args]);
  const server = await startServer(options, { log: () => undefined });
  running.push(server);
  return { http: `http://127.0.0.1:${server.httpPort}` };
}

const ready = async (http: string): Promise<number> => (await fetch(`${http}/v2/health/ready`)).status;
const index = async (http: string): Promise<Record<string, unknown>[]> => (await (await fetch(`${http}/v2/repository/index`, { method: 'POST' })).json()) as Record<string, unknown>[];

describe('readiness with a model that failed to load', () => {
  it('--model DIR whose model fails to load: not ready, and the index says why', async () => {
    const { http } = await serve(['--model', await brokenExport(), '--served-model-name', 'broken']);
    expect(await ready(http)).toBe(400);
    expect(await index(http)).toEqual([{ name: 'broken', version: '1', state: 'UNAVAILABLE', reason: expect.stringMatching(/failed to start the engine: .*Protobuf parsing failed/) }]);
    expect((await fetch(`${http}/v2/health/live`)).status).toBe(200);
  }, 120_000);

  it('--load-model of a model with a broken config, or one the repository does not hold: not ready, each with its reason', async () => {
    const repository = await makeRepository([
      { name: 'good', from: 'qwen3-tiny', config: configOf('qwen3-tiny', 'good') },
      { name: 'broken', from: 'qwen3-tiny', config: 'name: "broken"\nbackend: "llm"\nthis is not a config\n' },
    ]);
    const server = await startTestServer(repository, ['--model-control-mode', 'explicit', '--load-model', 'good', '--load-model', 'broken', '--load-model', 'missing']);
    running.push(server);
    expect(await ready(server.http)).toBe(400);
    const rows = await index(server.http);
    expect(rows).toContainEqual({ name: 'good', version: '1', state: 'READY', reason: '', precision: expect.any(String) });
    expect(rows).toContainEqual({ name: 'broken', version: '', state: 'UNAVAILABLE', reason: expect.stringMatching(/config/) });
    expect(rows).toContainEqual({ name: 'missing', version: '', state: 'UNAVAILABLE', reason: expect.stringMatching(/failed to load 'missing', model directory not found in the repository/) });
    // Unloaded on purpose, a model is no longer one the server was asked to serve.
    for (const name of ['broken', 'missing']) await fetch(`${server.http}/v2/repository/models/${name}/unload`, { method: 'POST' });
    expect(await ready(server.http)).toBe(200);
  }, 120_000);

  it('--load-model of a model that loads: ready once it is READY', async () => {
    const repository = await makeRepository([{ name: 'good', from: 'qwen3-tiny', config: configOf('qwen3-tiny', 'good') }]);
    const server = await startTestServer(repository, ['--model-control-mode', 'explicit', '--load-model', 'good']);
    running.push(server);
    expect(await ready(server.http)).toBe(200);
  }, 120_000);

  it('--strict-readiness false: ready whatever the models do', async () => {
    const { http } = await serve(['--model', await brokenExport(), '--served-model-name', 'broken', '--strict-readiness', 'false']);
    expect(await ready(http)).toBe(200);
  }, 120_000);
});
