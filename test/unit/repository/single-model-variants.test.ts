// `serve --model <dir>` picks the precision from the files the export holds, so an onnx-community
// directory that ships only 4-bit or model_int8.onnx weights serves without a config.
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { singleModelRepository } from '../../../src/repository/single-model.js';

const made: string[] = [];
afterAll(async () => {
  for (const dir of made) await rm(dir, { recursive: true, force: true });
});

async function exportHolding(...onnxFiles: string[]): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'conveyor-export-'));
  made.push(dir);
  await writeFile(join(dir, 'config.json'), '{}');
  await writeFile(join(dir, 'tokenizer.json'), '{}');
  await mkdir(join(dir, 'onnx'));
  for (const file of onnxFiles) await writeFile(join(dir, 'onnx', file), '');
  return dir;
}

async function precisionServed(dir: string): Promise<string | undefined> {
  const { root, name } = await singleModelRepository(dir);
  made.push(root);
  return /key: "precision" value: \{ string_value: "([^"]+)" \}/.exec(await readFile(join(root, name, 'config.pbtxt'), 'utf8'))?.[1];
}

describe('serve --model precision choice', () => {
  it('prefers fp32, then takes the first variant present in the declared order', async () => {
    expect(await precisionServed(await exportHolding('model.onnx', 'model_q4.onnx'))).toBe('fp32');
    expect(await precisionServed(await exportHolding('model_q4f16.onnx', 'model_q4.onnx'))).toBe('q4');
    expect(await precisionServed(await exportHolding('model_int8.onnx', 'model_bnb4.onnx'))).toBe('int8');
    expect(await precisionServed(await exportHolding('model_bnb4.onnx'))).toBe('bnb4');
  });

  it('names every file it looked for when the export has none', async () => {
    await expect(singleModelRepository(await exportHolding('model_weird.onnx'))).rejects.toThrow(
      /no onnx\/model\.onnx, .*onnx\/model_int8\.onnx, .*onnx\/model_q4\.onnx, onnx\/model_q4f16\.onnx, onnx\/model_bnb4\.onnx$/,
    );
  });
});
