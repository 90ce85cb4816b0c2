// The `precision` parameter through the real server (explicit model control): the 4-bit q4
// variant served end to end, transformers.js aliases (q8), an onnx-community directory that ships
// only model_int8.onnx, and a variant whose file is absent. Each load reports the file it chose
// in the log line and in the effective config's default_model_filename.
import { copyFile, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_REPOSITORY } from '../../models/default-repository.js';
import type { LlmModel } from '../../src/serving/llm-backend.js';
import { greedy } from '../support/decoder.js';
import { configOf, loadModel, makeRepository, startTestServer, type TestServer, withAttentionBackend } from '../support/server.js';

let server: TestServer;
// The Optimum graph named: these loads pick among its variant files (and compare with it run alone).
const withPrecision = (name: string, precision: string) =>
  configOf(
    'qwen3-tiny',
    name,
    withAttentionBackend('past_key_values', (text) => text.replace('string_value: "fp32"', `string_value: "${precision}"`)),
  );

beforeAll(async () => {
  const repository = await makeRepository([
    { name: 'tiny-q4', from: 'qwen3-tiny', config: withPrecision('tiny-q4', 'q4') },
    { name: 'tiny-q8', from: 'qwen3-tiny', config: withPrecision('tiny-q8', 'q8') },
    { name: 'tiny-bnb4', from: 'qwen3-tiny', config: withPrecision('tiny-bnb4', 'bnb4') },
  ]);
  // An onnx-community layout whose only int8 file is model_int8.onnx (copied: links out of a
  // version directory are refused).
  const source = join(DEFAULT_REPOSITORY, 'qwen3-tiny', '1');
  const community = join(repository, 'tiny-int8', '1');
  await mkdir(join(community, 'onnx'), { recursive: true });
  for (const file of ['config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json']) await copyFile(join(source, file), join(community, file));
  await copyFile(join(source, 'onnx', 'model_quantized.onnx'), join(community, 'onnx', 'model_int8.onnx'));
  await writeFile(join(repository, 'tiny-int8', 'config.pbtxt'), withPrecision('tiny-int8', 'int8'));
  server = await startTestServer(repository, ['--model-control-mode', 'explicit']);
}, 120_000);
afterAll(async () => server?.stop());

const load = (name: string) => loadModel(server, name);

async function loadedFile(name: string): Promise<string> {
  expect(await load(name)).toEqual({ status: 200, error: '' });
  const config = (await (await fetch(`${server.http}/v2/models/${name}/config`)).json()) as { default_model_filename: string };
  return config.default_model_filename;
}

describe('precision variants', () => {
  it('serves q4 end to end: the load names model_q4.onnx and greedy tokens equal the q4 graph run alone', async () => {
    expect(await loadedFile('tiny-q4')).toBe('onnx/model_q4.onnx');
    expect(server.logs.some((line) => line.includes('tiny-q4:1: precision q4: loading onnx/model_q4.onnx'))).toBe(true);

    const model = server.manager.resolve('tiny-q4') as LlmModel;
    const prompt = [9707, 11, 1879, 0, 358, 1079, 264];
    const tokens: number[] = [];
    const prepared = await model.prepare({ prompt: { kind: 'tokens', tokenIds: prompt }, sampling: { max_tokens: 12, ignore_eos: true, temperature: 0 } });
    for await (const event of model.generate(prepared)) tokens.push(...event.tokenIds);
    const session = await ort.InferenceSession.create(join(DEFAULT_REPOSITORY, 'qwen3-tiny', '1', 'onnx', 'model_q4.onnx'), { intraOpNumThreads: 1, logSeverityLevel: 3 });
    expect(tokens).toEqual(await greedy(session, ort, prompt, 12));

    const client = new OpenAI({ baseURL: `${server.http}/v1`, apiKey: 'unused', maxRetries: 0 });
    const completion = await client.chat.completions.create({ model: 'tiny-q4', messages: [{ role: 'user', content: 'Hello' }], max_tokens: 8, temperature: 0 });
    expect(completion.choices[0]!.message.role).toBe('assistant');
    expect(completion.usage!.completion_tokens).toBeGreaterThan(0);
  });

  it('takes the transformers.js alias q8 as int8 (model_quantized.onnx)', async () => {
    expect(await loadedFile('tiny-q8')).toBe('onnx/model_quantized.onnx');
  });

  it('loads an onnx-community directory that ships model_int8.onnx for int8', async () => {
    expect(await loadedFile('tiny-int8')).toBe('onnx/model_int8.onnx');
  });

  it('refuses a variant whose file the directory lacks, naming it, and loads nothing', async () => {
    const { status, error } = await load('tiny-bnb4');
    expect(status).toBe(400);
    expect(error).toContain("model file 'tiny-bnb4/1/onnx/model_bnb4.onnx' not found");
    expect((await fetch(`${server.http}/v2/models/tiny-bnb4/ready`)).status).not.toBe(200);
  });
});
