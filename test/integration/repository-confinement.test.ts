// Path confinement through the real repository load API (explicit model control): config
// overrides naming files outside the model directory, links that lead out, and file: overrides.
// Each refusal is a 400 with a message naming paths relative to the repository, loads nothing,
// and leaves no temporary directory behind.
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_REPOSITORY } from '../../models/default-repository.js';
import { OVERRIDE_DIR_PREFIX } from '../../src/serving/load-override.js';
import { configOf, makeRepository, startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;
let repository: string;
const systemTmpdir = process.env.TMPDIR;
let privateTmpdir: string;

beforeAll(async () => {
  // The override directories are counted in the temporary directory: a private one, so another
  // run of this test on the same machine cannot change the count.
  privateTmpdir = await mkdtemp(join(tmpdir(), 'conveyor-confinement-'));
  process.env.TMPDIR = privateTmpdir;
  repository = await makeRepository([
    { name: 'cnn', from: 'resnet-tiny', config: configOf('resnet-tiny', 'cnn') },
    { name: 'other', from: 'resnet-tiny', config: configOf('resnet-tiny', 'other') },
  ]);
  // A model whose version directory holds links: one inside, two leading out (one dangling).
  const linked = join(repository, 'linked', '1');
  await mkdir(linked, { recursive: true });
  await symlink(join(DEFAULT_REPOSITORY, 'resnet-tiny', '1', 'model.onnx'), join(linked, 'escape.onnx'));
  await symlink(join(repository, 'no-such-dir', 'model.onnx'), join(linked, 'dangling.onnx'));
  await symlink('escape.onnx', join(linked, 'alias.onnx'));
  await copyFile(join(DEFAULT_REPOSITORY, 'resnet-tiny', '1', 'model.onnx'), join(linked, 'model.onnx'));
  await mkdir(join(repository, 'linked', 'sub'));
  await symlink('../../other/labels.txt', join(repository, 'linked', 'sub', 'labels.txt'));
  server = await startTestServer(repository, ['--model-control-mode', 'explicit']);
});

afterAll(async () => {
  await server?.stop();
  if (systemTmpdir === undefined) delete process.env.TMPDIR;
  else process.env.TMPDIR = systemTmpdir;
  await rm(privateTmpdir, { recursive: true, force: true });
});

/** The cnn config as the load API's JSON `config` parameter, with `edit` applied. */
function configJson(name: string, edit: (config: Record<string, unknown>) => void = () => {}): string {
  const config: Record<string, unknown> = {
    name,
    backend: 'onnxruntime',
    max_batch_size: 8,
    input: [{ name: 'input', data_type: 'TYPE_FP32', dims: [3, 224, 224] }],
    output: [{ name: 'logits', data_type: 'TYPE_FP32', dims: [1000] }],
    instance_group: [{ count: 1, kind: 'KIND_CPU' }],
  };
  edit(config);
  return JSON.stringify(config);
}

async function load(name: string, parameters: Record<string, string>): Promise<{ status: number; error: string }> {
  const response = await fetch(`${server.http}/v2/repository/models/${name}/load`, { method: 'POST', body: JSON.stringify({ parameters }) });
  const text = await response.text();
  return { status: response.status, error: text === '' ? '' : (JSON.parse(text) as { error: string }).error };
}

const overrideDirs = async (name: string): Promise<string[]> => (await readdir(tmpdir())).filter((e) => e.startsWith(`${OVERRIDE_DIR_PREFIX}${name}-`));
const ready = async (name: string): Promise<number> => (await fetch(`${server.http}/v2/models/${name}/ready`)).status;

/** A refusal: 400, the expected text, no absolute path, nothing loaded. */
async function expectRefused(name: string, parameters: Record<string, string>, message: RegExp): Promise<string> {
  const { status, error } = await load(name, parameters);
  expect(status).toBe(400);
  expect(error).toMatch(message);
  for (const absolute of [repository, tmpdir(), DEFAULT_REPOSITORY]) expect(error).not.toContain(absolute);
  expect(await ready(name)).not.toBe(200);
  return error;
}

describe('repository load confinement', () => {
  it("refuses a default_model_filename with '..' or an absolute path", async () => {
    await expectRefused(
      'cnn',
      { config: configJson('cnn', (c) => (c.default_model_filename = '../../other/1/model.onnx')) },
      /default_model_filename '\.\.\/\.\.\/other\/1\/model\.onnx' must stay inside the model directory/,
    );
    const absolute = join(repository, 'other', '1', 'model.onnx');
    await expectRefused('cnn', { config: configJson('cnn', (c) => (c.default_model_filename = absolute)) }, /default_model_filename must be relative to the model directory, not absolute/);
  });

  it('refuses a label_filename leaving the model directory', async () => {
    const labels = (file: string) => configJson('cnn', (c) => (c.output = [{ name: 'logits', data_type: 'TYPE_FP32', dims: [1000], label_filename: file }]));
    await expectRefused('cnn', { config: labels('../other/labels.txt') }, /label_filename '\.\.\/other\/labels\.txt' must stay inside/);
    const linkedLabels = configJson('linked', (c) => (c.output = [{ name: 'logits', data_type: 'TYPE_FP32', dims: [1000], label_filename: 'sub/labels.txt' }]));
    await expectRefused('linked', { config: linkedLabels }, /label file of output 'logits' 'linked\/sub\/labels\.txt' leads outside its directory/);
  });

  it('refuses a model file that is a link out, with the same answer whether or not its target exists', async () => {
    const escape = await expectRefused(
      'linked',
      { config: configJson('linked', (c) => (c.default_model_filename = 'escape.onnx')) },
      /model file 'linked\/1\/escape\.onnx' leads outside its directory through a symbolic link/,
    );
    const dangling = await expectRefused('linked', { config: configJson('linked', (c) => (c.default_model_filename = 'dangling.onnx')) }, /leads outside/);
    expect(dangling).toBe(escape.replace('escape.onnx', 'dangling.onnx'));
    await expectRefused('linked', { config: configJson('linked', (c) => (c.default_model_filename = 'alias.onnx')) }, /model file 'linked\/1\/alias\.onnx' leads outside/);
  });

  it('a missing model file is named relative to the repository', async () => {
    await expectRefused('cnn', { config: configJson('cnn', (c) => (c.default_model_filename = 'missing.onnx')) }, /model file 'cnn\/1\/missing\.onnx' not found/);
  });

  it("refuses file: overrides with '..' or absolute paths before writing anything", async () => {
    const before = await overrideDirs('cnn');
    const bytes = Buffer.from('not a model').toString('base64');
    await expectRefused('cnn', { config: configJson('cnn'), 'file:../../escape/model.onnx': bytes }, /file: load parameter '\.\.\/\.\.\/escape\/model\.onnx' must stay inside/);
    await expectRefused('cnn', { config: configJson('cnn'), 'file:/tmp/x/model.onnx': bytes }, /file: load parameter must be relative/);
    expect(await overrideDirs('cnn')).toEqual(before);
  });

  it('a file: override that fails to load leaves no temporary directory and no absolute path', async () => {
    const before = await overrideDirs('cnn');
    const { status, error } = await load('cnn', { config: configJson('cnn'), 'file:1/model.onnx': Buffer.from('not a model').toString('base64') });
    expect(status).toBeGreaterThanOrEqual(400);
    expect(error).not.toContain(tmpdir());
    expect(error).toContain('cnn/1/model.onnx');
    expect(await ready('cnn')).not.toBe(200);
    expect(await overrideDirs('cnn')).toEqual(before);
  });

  it('a file: override that loads keeps its directory while loaded and removes it on unload', async () => {
    const before = await overrideDirs('other');
    const model = (await readFile(join(DEFAULT_REPOSITORY, 'resnet-tiny', '1', 'model.onnx'))).toString('base64');
    const { status } = await load('other', { config: configJson('other'), 'file:1/model.onnx': model });
    expect(status).toBe(200);
    expect(await ready('other')).toBe(200);
    expect((await overrideDirs('other')).length).toBe(before.length + 1);
    // A reload from the repository replaces the override's versions: their directory goes.
    expect((await load('other', {})).status).toBe(200);
    expect(await overrideDirs('other')).toEqual(before);
    expect((await load('other', { config: configJson('other'), 'file:1/model.onnx': model })).status).toBe(200);
    expect((await fetch(`${server.http}/v2/repository/models/other/unload`, { method: 'POST' })).status).toBe(200);
    expect(await overrideDirs('other')).toEqual(before);
  });
});
