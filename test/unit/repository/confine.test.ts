// The confinement rule on real directories: plain paths, `..`, absolute paths, links that stay
// inside, links that leave (with and without an existing target), and what messages show.
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { confinedPath, existingConfinedFile, isInside, lexicalProblem } from '../../../src/repository/confine.js';
import { parseModelConfig } from '../../../src/repository/config/index.js';

let base: string;
let model: string;
const root = () => ({ dir: join(model, '1'), display: 'net/1' });
const escapeMessage = (file: string) => `model file 'net/1/${file}' leads outside its directory through a symbolic link`;

beforeEach(async () => {
  base = await mkdtemp(join(tmpdir(), 'conveyor-confine-'));
  model = join(base, 'net');
  await mkdir(join(model, '1', 'onnx'), { recursive: true });
  await writeFile(join(model, '1', 'model.onnx'), 'weights');
  await writeFile(join(base, 'outside.onnx'), 'other weights');
});

afterEach(async () => {
  await rm(base, { recursive: true, force: true });
});

describe('lexicalProblem', () => {
  it('accepts plain relative paths', () => {
    for (const ok of ['model.onnx', 'onnx/model.onnx', './model.onnx', 'a..b/c', '..model']) expect(lexicalProblem(ok, 'file')).toBeUndefined();
  });

  it("refuses '..' segments, absolute paths, NUL and empty names, without echoing absolute paths", () => {
    expect(lexicalProblem('../../other/1/model.onnx', 'file')).toBe("file '../../other/1/model.onnx' must stay inside the model directory (no '..' segments)");
    expect(lexicalProblem('onnx\\..\\..\\x', 'file')).toMatch(/no '\.\.' segments/);
    expect(lexicalProblem('/etc/passwd', 'file')).toBe('file must be relative to the model directory, not absolute');
    expect(lexicalProblem('C:\\models\\x.onnx', 'file')).toBe('file must be relative to the model directory, not absolute');
    expect(lexicalProblem('\\\\server\\share', 'file')).toMatch(/not absolute/);
    expect(lexicalProblem('a\0b', 'file')).toBe('file holds a NUL character');
    expect(lexicalProblem('', 'file')).toBe('file is empty');
  });

  it('is what config validation applies to default_model_filename', () => {
    const parse = (file: string) => parseModelConfig(`backend: "onnxruntime"\ndefault_model_filename: "${file}"\n`, 'net/config.pbtxt', 'net');
    expect(() => parse('../../other/1/model.onnx')).toThrow("net/config.pbtxt:2:1: default_model_filename '../../other/1/model.onnx' must stay inside the model directory (no '..' segments)");
    expect(() => parse('/srv/model.onnx')).toThrow('net/config.pbtxt:2:1: default_model_filename must be relative to the model directory, not absolute');
    expect(parse('sub/net.onnx').default_model_filename).toBe('sub/net.onnx');
  });
});

describe('isInside', () => {
  it('compares whole components', () => {
    expect(isInside('/r/net', '/r/net')).toBe(true);
    expect(isInside('/r/net', '/r/net/1/x')).toBe(true);
    expect(isInside('/r/net', '/r/net2/x')).toBe(false);
    expect(isInside('/r/net', '/r')).toBe(false);
  });
});

describe('confinedPath', () => {
  it('resolves a normal file and reports a missing one with a relative name', async () => {
    const found = await confinedPath(root(), 'model.onnx', 'model file');
    expect(found).toMatchObject({ exists: true, display: 'net/1/model.onnx' });
    expect(found.path.endsWith(join('net', '1', 'model.onnx'))).toBe(true);
    expect(await confinedPath(root(), 'onnx/missing.onnx', 'model file')).toMatchObject({ exists: false, display: 'net/1/onnx/missing.onnx' });
    await expect(existingConfinedFile(root(), 'onnx/missing.onnx', 'model file')).rejects.toThrow("model file 'net/1/onnx/missing.onnx' not found");
  });

  it("refuses '..' and absolute paths before touching the disk", async () => {
    await expect(confinedPath(root(), '../../outside.onnx', 'model file')).rejects.toMatchObject({ code: 'INVALID_ARG' });
    await expect(confinedPath(root(), join(base, 'outside.onnx'), 'model file')).rejects.toThrow('model file must be relative to the model directory, not absolute');
  });

  it('follows links that stay inside, relative or absolute', async () => {
    await symlink('model.onnx', join(model, '1', 'alias.onnx'));
    await symlink('../model.onnx', join(model, '1', 'onnx', 'model.onnx'));
    await symlink(join(model, '1', 'model.onnx'), join(model, '1', 'absolute.onnx'));
    for (const file of ['alias.onnx', 'onnx/model.onnx', 'absolute.onnx']) {
      const found = await confinedPath(root(), file, 'model file');
      expect(found.exists).toBe(true);
      expect(found.path.endsWith(join('net', '1', 'model.onnx'))).toBe(true);
    }
  });

  it('refuses links that leave, and says the same whether or not the target exists', async () => {
    await symlink('../../outside.onnx', join(model, '1', 'relative.onnx'));
    await symlink(join(base, 'outside.onnx'), join(model, '1', 'absolute.onnx'));
    await symlink(join(base, 'nothing-here.onnx'), join(model, '1', 'dangling.onnx'));
    await symlink('..', join(model, '1', 'up'));
    for (const file of ['relative.onnx', 'absolute.onnx', 'dangling.onnx']) {
      await expect(confinedPath(root(), file, 'model file')).rejects.toThrow(escapeMessage(file));
    }
    await expect(confinedPath(root(), 'up/1/model.onnx', 'model file')).rejects.toThrow(escapeMessage('up/1/model.onnx'));
  });

  it('lets the root itself be a link (repositories assembled from links)', async () => {
    await symlink(join(model, '1'), join(base, 'linked-version'), 'dir');
    const found = await confinedPath({ dir: join(base, 'linked-version'), display: 'net/2' }, 'model.onnx', 'model file');
    expect(found).toMatchObject({ exists: true, display: 'net/2/model.onnx' });
  });

  it('stops at link loops', async () => {
    await symlink('b', join(model, '1', 'a'));
    await symlink('a', join(model, '1', 'b'));
    await expect(confinedPath(root(), 'a', 'model file')).rejects.toThrow("model file 'net/1/a' has too many levels of symbolic links");
  });
});
