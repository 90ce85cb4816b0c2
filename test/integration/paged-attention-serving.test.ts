// attention_backend through the real server: the same tiny decoder served twice, once on its
// Optimum graph (PastKeyValuesRunner) and once on its paged graph (PagedRunner, reading the block
// pool in place), answers concurrent streaming chats from the official OpenAI SDK with the same
// greedy text; the load reports the paged file; a bad backend name or a directory without the
// paged graph is refused at load with a message naming what is wrong.
import { copyFile, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_REPOSITORY } from '../../models/default-repository.js';
import { configOf, loadModel, makeRepository, startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;
const withBackend = (name: string, backend: string) => configOf('qwen3-tiny', name, (text) => `${text}\nparameters: { key: "attention_backend" value: { string_value: "${backend}" } }\n`);

beforeAll(async () => {
  const repository = await makeRepository([
    { name: 'tiny-pkv', from: 'qwen3-tiny', config: withBackend('tiny-pkv', 'past_key_values') },
    { name: 'tiny-paged', from: 'qwen3-tiny', config: withBackend('tiny-paged', 'paged') },
    { name: 'tiny-flash', from: 'qwen3-tiny', config: withBackend('tiny-flash', 'flash') },
  ]);
  // An export with only the Optimum graph (copied: links out of a version directory are refused).
  const source = join(DEFAULT_REPOSITORY, 'qwen3-tiny', '1');
  const optimumOnly = join(repository, 'tiny-nopaged', '1');
  await mkdir(join(optimumOnly, 'onnx'), { recursive: true });
  for (const file of ['config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json', 'onnx/model.onnx']) await copyFile(join(source, file), join(optimumOnly, file));
  await writeFile(join(repository, 'tiny-nopaged', 'config.pbtxt'), withBackend('tiny-nopaged', 'paged'));
  server = await startTestServer(repository, ['--model-control-mode', 'explicit']);
}, 120_000);
afterAll(async () => server?.stop());

const load = (name: string) => loadModel(server, name);

describe('attention_backend', () => {
  it('serves the paged graph with the same greedy text as the Optimum graph, under concurrent streams', async () => {
    expect(await load('tiny-pkv')).toEqual({ status: 200, error: '' });
    expect(await load('tiny-paged')).toEqual({ status: 200, error: '' });
    const config = (await (await fetch(`${server.http}/v2/models/tiny-paged/config`)).json()) as { default_model_filename: string };
    expect(config.default_model_filename).toBe('onnx/model_paged.onnx');
    expect(server.logs.some((line) => line.includes('tiny-paged:1: precision fp32: loading onnx/model_paged.onnx (attention_backend paged)'))).toBe(true);

    const client = new OpenAI({ baseURL: `${server.http}/v1`, apiKey: 'unused' });
    const prompts = ['Hello there', 'Write a haiku about the sea', 'What is 2 + 2?', 'List three colours', 'Tell me a story about a fox who learned to fly over the mountains', 'Hi'];
    const chat = async (model: string, content: string): Promise<string> => {
      const stream = await client.chat.completions.create({ model, messages: [{ role: 'user', content }], max_tokens: 12, temperature: 0, stream: true });
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
      return text;
    };
    // All twelve streams at once: both engines batch, arrivals stagger into running decodes.
    const [optimum, paged] = await Promise.all([Promise.all(prompts.map((p) => chat('tiny-pkv', p))), Promise.all(prompts.map((p) => chat('tiny-paged', p)))]);
    expect(paged).toEqual(optimum);
    expect(paged.every((text) => text.length > 0)).toBe(true);
  }, 120_000);

  it('refuses an unknown backend name, listing the choices', async () => {
    const { status, error } = await load('tiny-flash');
    expect(status).toBe(400);
    expect(error).toContain("parameter attention_backend must be one of past_key_values, paged, got 'flash'");
  });

  it('refuses paged on an export without the paged graph, naming the missing file', async () => {
    const { status, error } = await load('tiny-nopaged');
    expect(status).toBeGreaterThanOrEqual(400);
    expect(error).toContain('onnx/model_paged.onnx');
  });
});
