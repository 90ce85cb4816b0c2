// `npm run build`'s output serves with no TypeScript loader: the compiled CLI is copied into a
// package whose node_modules has every dependency but tsx, so a worker (engine, tokenizer,
// grammar, instance) that still reached for its .ts entry, or the loader, would fail to start.
// A smoke subset of the integration tests then runs against it through the real SDKs.
import { execFile } from 'node:child_process';
import { cp, mkdir, mkdtemp, readdir, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_REPOSITORY } from '../../models/default-repository.js';
import { killCliServer, startCliServer, type CliServer } from '../support/cli-server.js';

const run = promisify(execFile);
const ROOT = resolve('.');
const LOADER = 'tsx';

let server: CliServer;
let packageDir: string;

/** A package holding the build and package.json, its node_modules linking every dependency except the loader. */
async function packageWithoutLoader(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'conveyor-dist-'));
  await cp(join(ROOT, 'dist'), join(dir, 'dist'), { recursive: true });
  await cp(join(ROOT, 'package.json'), join(dir, 'package.json'));
  await mkdir(join(dir, 'node_modules'));
  for (const name of await readdir(join(ROOT, 'node_modules'))) {
    if (name !== LOADER && name !== '.bin') await symlink(join(ROOT, 'node_modules', name), join(dir, 'node_modules', name));
  }
  return dir;
}

beforeAll(async () => {
  await run('npm', ['run', 'build'], { cwd: ROOT });
  packageDir = await packageWithoutLoader();
  // The default repository's TypeScript models (the ensembles' steps) need tsx, which this package
  // lacks on purpose: the server loads the models the cases use, and one case asks for a pipeline.
  const load = ['qwen3-tiny', 'resnet-tiny'].flatMap((name) => ['--load-model', name]);
  server = await startCliServer(DEFAULT_REPOSITORY, ['--model-control-mode', 'explicit', ...load], { entry: ['dist/src/cli.js'], cwd: packageDir });
  await server.waitForLog(/^Metrics listening/);
}, 600_000);

afterAll(async () => {
  if (server) await killCliServer(server);
  if (packageDir) await rm(packageDir, { recursive: true, force: true });
});

describe('the compiled build (npm run build → dist/)', () => {
  it('is ready and lists the repository', async () => {
    expect((await fetch(`${server.http}/v2/health/ready`)).status).toBe(200);
    const client = new OpenAI({ baseURL: `${server.http}/v1`, apiKey: 'none' });
    const ids = (await client.models.list()).data.map((m) => m.id);
    expect(ids).toContain('qwen3-tiny');
  });

  it('refuses a TypeScript model without tsx, saying so, and keeps serving', async () => {
    const response = await fetch(`${server.http}/v2/repository/models/image-classifier/load`, { method: 'POST' });
    expect(response.ok).toBe(false);
    expect(((await response.json()) as { error: string }).error).toContain('ship model.js, or install tsx');
    expect((await fetch(`${server.http}/v2/models/resnet-tiny/ready`)).status).toBe(200);
  });

  it('serves the web UI (ui/public copied beside the compiled server)', async () => {
    const page = await fetch(`${server.http}/`);
    expect([page.status, page.headers.get('content-type')]).toEqual([200, 'text/html; charset=utf-8']);
    expect((await fetch(`${server.http}/ui/app.js`)).status).toBe(200);
  });

  it('streams a chat completion (tokenizer and engine workers)', async () => {
    const client = new OpenAI({ baseURL: `${server.http}/v1`, apiKey: 'none' });
    const stream = await client.chat.completions.create({
      model: 'qwen3-tiny',
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 6,
      ignore_eos: true,
      stream: true,
    } as OpenAI.ChatCompletionCreateParamsStreaming);
    const finish: (string | null)[] = [];
    for await (const chunk of stream) finish.push(chunk.choices[0]?.finish_reason ?? null);
    expect(finish.at(-1)).toBe('length');
  });

  it('constrains output to a JSON schema (grammar worker)', async () => {
    const client = new OpenAI({ baseURL: `${server.http}/v1`, apiKey: 'none' });
    const schema = { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'], additionalProperties: false };
    const completion = await client.chat.completions.create({
      model: 'qwen3-tiny',
      messages: [{ role: 'user', content: 'answer' }],
      max_tokens: 120,
      seed: 7,
      response_format: { type: 'json_schema', json_schema: { name: 'answer', schema, strict: true } },
    });
    expect(completion.choices[0]?.finish_reason).toBe('stop');
    expect(typeof (JSON.parse(completion.choices[0]!.message.content!) as { ok: unknown }).ok).toBe('boolean');
  });

  it('runs a KServe v2 inference (instance workers)', async () => {
    const data = new Array(3 * 224 * 224).fill(0.5);
    const response = await fetch(`${server.http}/v2/models/resnet-tiny/infer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ inputs: [{ name: 'input', shape: [1, 3, 224, 224], datatype: 'FP32', data }] }),
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { outputs: { name: string; shape: number[] }[] };
    expect(body.outputs[0]).toMatchObject({ name: 'logits', shape: [1, 1000] });
  });
});
