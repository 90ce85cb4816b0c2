// loadModelConfig on real directories: labels beside the config, and configs derived from files.
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadModelConfig } from '../../../../src/repository/config/index.js';
import { COMMON, group } from './fixtures.js';
import { expectRejection } from './helpers.js';

let root: string;
let modelDir: string;
let configPath: string;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'conveyor-config-'));
  modelDir = join(root, 'net');
  configPath = join(modelDir, 'config.pbtxt');
  await mkdir(modelDir);
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

async function addVersionFile(version: string, file: string): Promise<void> {
  await mkdir(join(modelDir, version), { recursive: true });
  await writeFile(join(modelDir, version, file), '');
}

const OUTPUT_WITH_LABELS = 'backend: "onnxruntime"\noutput {\n  name: "logits" data_type: TYPE_FP32 dims: [ 2 ]\n  label_filename: "labels.txt"\n}\n';

describe('loadModelConfig', () => {
  it('labels errors with the path it was given', async () => {
    await writeFile(configPath, 'backend: "onnxruntime"\ninput {\n  name: "x"\n');
    await expectRejection(loadModelConfig(configPath, 'net'), `${configPath}:4:1: expected '}' to close the message opened at 2:7, found end of input`);
  });

  it('requires output label files to exist beside the config', async () => {
    await writeFile(configPath, OUTPUT_WITH_LABELS);
    await expectRejection(loadModelConfig(configPath, 'net', { label: 'net/config.pbtxt' }), "net/config.pbtxt:4:3: output 'logits' label_filename 'net/labels.txt' not found");
    await writeFile(join(modelDir, 'labels.txt'), 'cat\ndog\n');
    expect((await loadModelConfig(configPath, 'net')).output[0]!.label_filename).toBe('labels.txt');
  });

  it('refuses a label file that is a link out of the model directory, whether or not its target exists', async () => {
    await writeFile(configPath, OUTPUT_WITH_LABELS);
    const escape = "net/config.pbtxt:4:3: output 'logits' label_filename 'net/labels.txt' leads outside its directory through a symbolic link";
    await symlink(join(root, 'absent.txt'), join(modelDir, 'labels.txt'));
    await expectRejection(loadModelConfig(configPath, 'net', { label: 'net/config.pbtxt' }), escape);
    await writeFile(join(root, 'absent.txt'), 'secret\n');
    await expectRejection(loadModelConfig(configPath, 'net', { label: 'net/config.pbtxt' }), escape);
  });

  it('labels read errors without the absolute path', async () => {
    await mkdir(configPath);
    await expectRejection(loadModelConfig(configPath, 'net', { label: 'net/config.pbtxt' }), 'net/config.pbtxt: cannot read the config (EISDIR)');
  });

  it('gives a config without backend or platform the onnxruntime backend when a version holds the model file', async () => {
    await writeFile(configPath, 'max_batch_size: 2\n');
    await addVersionFile('3', 'model.onnx');
    const config = await loadModelConfig(configPath, 'net');
    expect([config.backend, config.platform, config.max_batch_size]).toEqual(['onnxruntime', 'onnxruntime_onnx', 2]);
  });

  it('looks for default_model_filename, and ignores version directories starting with 0', async () => {
    await writeFile(configPath, 'default_model_filename: "net.onnx"\n');
    await addVersionFile('1', 'model.onnx');
    await expectRejection(loadModelConfig(configPath, 'net'), `${configPath}:1:1: the config sets neither 'backend' nor 'platform' (use backend: "onnxruntime" or backend: "llm")`);
    await addVersionFile('01', 'net.onnx');
    await expectRejection(loadModelConfig(configPath, 'net'), `${configPath}:1:1: the config sets neither 'backend' nor 'platform' (use backend: "onnxruntime" or backend: "llm")`);
    await addVersionFile('2', 'net.onnx');
    expect((await loadModelConfig(configPath, 'net')).backend).toBe('onnxruntime');
  });

  it('derives a whole config when config.pbtxt is missing but a version holds model.onnx', async () => {
    await addVersionFile('1', 'model.onnx');
    expect(await loadModelConfig(configPath, 'net')).toEqual({
      ...COMMON,
      name: 'net',
      platform: 'onnxruntime_onnx',
      backend: 'onnxruntime',
      max_batch_size: 0,
      input: [],
      output: [],
      instance_group: [group('net', 'KIND_CPU', 2)],
      default_model_filename: 'model.onnx',
      parameters: {},
    });
  });

  it('fails when config.pbtxt is missing and nothing can stand in for it', async () => {
    await expectRejection(loadModelConfig(configPath, 'net'), `${configPath}: no such file, and no version directory holds an ONNX model to derive a config from`);
  });
});
