// The pure parts of models by name: ids, which files serving fetches, the name mapping of
// ORG/NAME ids, and the confinement rule for a Hugging Face cache snapshot's links.
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { isServableModelName, repositoryModelName } from '../../../src/contracts/model-names.js';
import { formatHubId, parseHubId } from '../../../src/hub/hub-id.js';
import { progressBar } from '../../../src/hub/progress.js';
import { selectFiles } from '../../../src/hub/select.js';
import { confinedPath, linkScopeOf } from '../../../src/repository/confine.js';

describe('Hub model ids', () => {
  it('reads ORG/NAME[@REVISION] and refuses anything else', () => {
    expect(parseHubId('Qwen/Qwen3-0.6B')).toEqual({ repo: 'Qwen/Qwen3-0.6B', revision: 'main', pinned: false });
    expect(parseHubId('org/name@refs/pr/1')).toEqual({ repo: 'org/name', revision: 'refs/pr/1', pinned: true });
    expect(formatHubId(parseHubId('org/name@v2')!)).toBe('org/name@v2');
    for (const bad of ['name', 'a/b/c', '/abs/path', './dir', 'org/..', 'org/name@', 'org/name@a b', 'org/name@../x']) expect(parseHubId(bad), bad).toBeNull();
  });

  it('maps ORG/NAME ids to the repository name ORG--NAME, leaving other names as they are', () => {
    expect(repositoryModelName('org/name')).toBe('org--name');
    expect(repositoryModelName('qwen3-tiny')).toBe('qwen3-tiny');
    expect(repositoryModelName('a/b/c')).toBe('a/b/c');
    expect(isServableModelName('org/name')).toBe(true);
    expect(isServableModelName('a/b/c')).toBe(false);
    expect(isServableModelName('..')).toBe(false);
  });

  it('draws a progress bar', () => {
    expect(progressBar('onnx/model.onnx', 512, 1024)).toBe(`onnx/model.onnx [${'#'.repeat(12)}${' '.repeat(12)}]  50% 512 B/1.0 KiB`);
  });
});

describe('what serving fetches', () => {
  const onnx = [
    'README.md',
    'config.json',
    'generation_config.json',
    'tokenizer.json',
    'tokenizer_config.json',
    'onnx/model.onnx',
    'onnx/model.onnx_data',
    'onnx/model.onnx_data_1',
    'onnx/model_q4.onnx',
    'onnx/model_paged.onnx',
    'onnx/model_paged.segments/segment_00.onnx',
  ];

  it('takes one variant of an ONNX export with its data files, and the config and tokenizer files', () => {
    expect(selectFiles(onnx, { attentionBackend: 'past_key_values' })).toEqual({
      kind: 'onnx',
      precision: 'fp32',
      modelFile: 'onnx/model.onnx',
      files: ['config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json', 'onnx/model.onnx', 'onnx/model.onnx_data', 'onnx/model.onnx_data_1'],
    });
    expect(selectFiles(onnx, { precision: 'q4' }).files).toContain('onnx/model_q4.onnx');
    expect(selectFiles(onnx, { precision: 'q4' }).files).not.toContain('onnx/model.onnx');
    expect(selectFiles(onnx, { attentionBackend: 'paged' }).files.filter((f) => f.startsWith('onnx/'))).toEqual(['onnx/model_paged.onnx', 'onnx/model_paged.segments/segment_00.onnx']);
    // No backend named: the paged graph and its segments where the export has them (what the llm backend then runs), else the Optimum graph.
    expect(selectFiles(onnx, {})).toMatchObject({ modelFile: 'onnx/model_paged.onnx' });
    expect(selectFiles(onnx, {}).files.filter((f) => f.startsWith('onnx/'))).toEqual(['onnx/model_paged.onnx', 'onnx/model_paged.segments/segment_00.onnx']);
    expect(selectFiles(onnx, { precision: 'q4' })).toMatchObject({ modelFile: 'onnx/model_q4.onnx' });
  });

  it('names what an export lacks', () => {
    expect(() => selectFiles(onnx, { precision: 'fp16' })).toThrow('has no onnx/model_fp16.onnx for --precision fp16 (onnx/ holds model.onnx, model_paged.onnx, model_q4.onnx)');
    expect(() => selectFiles(['config.json', 'onnx/model.onnx'], {})).toThrow('has no tokenizer.json');
    expect(() => selectFiles(['config.json', 'tokenizer.json', 'pytorch_model.bin'], {})).toThrow('neither an ONNX export');
  });

  it('takes a safetensors checkpoint whole, to convert (fp32 unless asked)', () => {
    const checkpoint = ['config.json', 'tokenizer.json', 'model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors', 'model.safetensors.index.json', 'README.md'];
    expect(selectFiles(checkpoint, { precision: 'q8' })).toEqual({
      kind: 'safetensors',
      precision: 'int8',
      files: ['config.json', 'tokenizer.json', 'model.safetensors.index.json', 'model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors'],
    });
    expect(() => selectFiles(checkpoint, { precision: 'bnb4' })).toThrow('not bnb4');
  });
});

describe("a Hugging Face cache snapshot's links", () => {
  const roots: string[] = [];
  afterAll(() => Promise.all(roots.map((dir) => rm(dir, { recursive: true, force: true }))));

  it('may lead anywhere inside models--ORG--NAME, and nowhere outside it', async () => {
    const cache = await mkdtemp(join(tmpdir(), 'conveyor-hub-confine-'));
    roots.push(cache);
    const entry = join(cache, 'models--org--name');
    const snapshot = join(entry, 'snapshots', 'abc');
    await mkdir(join(entry, 'blobs'), { recursive: true });
    await mkdir(join(snapshot, 'onnx'), { recursive: true });
    await writeFile(join(entry, 'blobs', 'sha'), 'weights');
    await writeFile(join(cache, 'outside'), 'secret');
    await symlink('../../../blobs/sha', join(snapshot, 'onnx', 'model.onnx'));
    await symlink('../../../outside', join(snapshot, 'config.json'));
    await symlink(join(cache, 'outside'), join(snapshot, 'tokenizer.json'));
    expect(linkScopeOf(snapshot)).toBe(entry);
    expect(linkScopeOf(join(cache, 'plain'))).toBe(join(cache, 'plain'));
    const root = { dir: snapshot, display: 'm/1' };
    expect(await confinedPath(root, 'onnx/model.onnx', 'model file')).toEqual({ path: join(entry, 'blobs', 'sha'), display: 'm/1/onnx/model.onnx', exists: true });
    await expect(confinedPath(root, 'config.json', 'model file')).rejects.toThrow("model file 'm/1/config.json' leads outside its directory through a symbolic link");
    await expect(confinedPath(root, 'tokenizer.json', 'model file')).rejects.toThrow('leads outside its directory');
    // Outside a snapshot, the same link into a sibling directory is refused as before.
    const plain = join(cache, 'plain');
    await mkdir(plain);
    await symlink('../models--org--name/blobs/sha', join(plain, 'model.onnx'));
    await expect(confinedPath({ dir: plain, display: 'p/1' }, 'model.onnx', 'model file')).rejects.toThrow('leads outside its directory');
  });
});
