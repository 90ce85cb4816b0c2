// `serve --model <dir>` picks the precision from the files the export holds, so an onnx-community
// directory that ships only 4-bit or model_int8.onnx weights serves without a config; --precision
// picks one, refused at startup when its file is absent, and --max-model-len may not exceed the
// context the export states.
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { singleModelRepository, type SingleModelParameters } from '../../../src/repository/single-model.js';

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

async function precisionServed(dir: string, parameters: SingleModelParameters = {}): Promise<string | undefined> {
  const { root, name } = await singleModelRepository(dir, undefined, parameters);
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

  it('writes tool_call_parser auto unless --tool-call-parser names one', async () => {
    const parser = async (parameters: SingleModelParameters) => {
      const { root, name } = await singleModelRepository(await exportHolding('model.onnx'), undefined, parameters);
      made.push(root);
      return /key: "tool_call_parser" value: \{ string_value: "([^"]+)" \}/.exec(await readFile(join(root, name, 'config.pbtxt'), 'utf8'))?.[1];
    };
    expect(await parser({})).toBe('auto');
    expect(await parser({ toolCallParser: 'llama3_json' })).toBe('llama3_json');
  });

  it('names every file it looked for when the export has none', async () => {
    await expect(singleModelRepository(await exportHolding('model_weird.onnx'))).rejects.toThrow(
      /no onnx\/model\.onnx, .*onnx\/model_int8\.onnx, .*onnx\/model_q4\.onnx, onnx\/model_q4f16\.onnx, onnx\/model_bnb4\.onnx$/,
    );
  });

  it('--precision serves the variant it names, by any of its names and files', async () => {
    const dir = await exportHolding('model.onnx', 'model_int8.onnx', 'model_q4f16.onnx');
    expect(await precisionServed(dir, { precision: 'q4f16' })).toBe('q4f16');
    expect(await precisionServed(dir, { precision: 'int8' })).toBe('int8');
    expect(await precisionServed(dir, { precision: 'q8' })).toBe('int8');
    expect(await precisionServed(dir, { precision: 'fp32' })).toBe('fp32');
  });

  it('refuses a --precision whose file the export lacks, naming the files looked for and the ones present', async () => {
    const dir = await exportHolding('model.onnx', 'model_q4.onnx');
    await writeFile(join(dir, 'onnx', 'model.onnx_data'), '');
    await expect(precisionServed(dir, { precision: 'int8' })).rejects.toThrow(
      `--model ${dir}: --precision int8 needs onnx/model_quantized.onnx or onnx/model_int8.onnx, and onnx/ holds only model.onnx, model_q4.onnx`,
    );
    await expect(precisionServed(await exportHolding(), { precision: 'fp16' })).rejects.toThrow(/--precision fp16 needs onnx\/model_fp16\.onnx, and the directory has no onnx\/\*\.onnx file$/);
  });

  it('with a paged attention backend, looks for the paged graph of the variant', async () => {
    const dir = await exportHolding('model.onnx', 'model_q4.onnx', 'model_paged_q4.onnx');
    expect(await precisionServed(dir, { attentionBackend: 'paged' })).toBe('q4');
    await expect(precisionServed(dir, { precision: 'fp32', attentionBackend: 'paged_onnx' })).rejects.toThrow(/--precision fp32 needs onnx\/model_paged\.onnx, and onnx\/ holds only/);
  });

  it('--max-model-len may narrow the context the export states, never widen it', async () => {
    const dir = await exportHolding('model.onnx');
    await writeFile(join(dir, 'config.json'), JSON.stringify({ max_position_embeddings: 4096 }));
    expect(await precisionServed(dir, { maxModelLen: 4096 })).toBe('fp32');
    await expect(precisionServed(dir, { maxModelLen: 4097 })).rejects.toThrow(`--max-model-len 4097 exceeds the model's context length 4096 (config.json max_position_embeddings in ${dir})`);
    await writeFile(join(dir, 'config.json'), '{}');
    await writeFile(join(dir, 'tokenizer_config.json'), JSON.stringify({ model_max_length: 512 }));
    await expect(precisionServed(dir, { maxModelLen: 1024 })).rejects.toThrow(/context length 512 \(tokenizer_config.json model_max_length/);
  });
});
