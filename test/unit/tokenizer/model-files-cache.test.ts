// Reading a model directory twice while the first read is in use gives the same parsed files and
// the same tokenizer (a precision swap or a second version must not re-parse an 11 MB
// tokenizer.json on the main thread); a changed file, or a copy elsewhere, is read afresh.
import { cp, mkdtemp, rm, symlink, utimes } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_REPOSITORY } from '../../../models/default-repository.js';
import { createTokenizer, readModelFiles } from '../../../src/tokenizer/model-files.js';

const SOURCE = join(DEFAULT_REPOSITORY, 'qwen3-tiny', '1');
let scratch: string;

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'conveyor-model-files-'));
  for (const name of ['tokenizer.json', 'tokenizer_config.json', 'generation_config.json', 'config.json']) await cp(join(SOURCE, name), join(scratch, 'copy', name), { recursive: true });
  await symlink(SOURCE, join(scratch, 'linked'), 'dir');
});

afterAll(() => rm(scratch, { recursive: true, force: true }));

describe('readModelFiles and createTokenizer reuse what is still in use', () => {
  it('gives the same files and tokenizer for the same directory, and through a link to it', async () => {
    const first = await readModelFiles(SOURCE);
    const again = await readModelFiles(SOURCE);
    const linked = await readModelFiles(join(scratch, 'linked'));
    expect(again).toBe(first);
    expect(linked).toBe(first);
    expect(createTokenizer(again)).toBe(createTokenizer(first));
    expect(createTokenizer(first).encode('hello world').ids.length).toBeGreaterThan(0);
  });

  it('reads a copy, and a file changed since, afresh', async () => {
    const original = await readModelFiles(SOURCE);
    const copy = await readModelFiles(join(scratch, 'copy'));
    expect(copy).not.toBe(original);
    expect(copy.tokenizerConfig).toEqual(original.tokenizerConfig);
    const later = new Date(Date.now() + 5_000);
    await utimes(join(scratch, 'copy', 'tokenizer_config.json'), later, later);
    const changed = await readModelFiles(join(scratch, 'copy'));
    expect(changed).not.toBe(copy);
    expect(createTokenizer(changed)).not.toBe(createTokenizer(copy));
  });

  it('reports a missing file as before', async () => {
    await expect(readModelFiles(join(scratch, 'absent'))).rejects.toThrow(/cannot read tokenizer.json: ENOENT/);
  });
});
