// attention_backend through the real server: the same tiny decoder served three times — on its
// Optimum graph (PastKeyValuesRunner), on its segmented paged decoder with the native kernel
// (paged: NativePagedRunner) and on its paged graph (paged_onnx: PagedRunner, ORT's attention) —
// answers concurrent streaming chats from the official OpenAI SDK with the same greedy text; each
// load reports the file it runs; a bad backend name or a directory without the paged graph is
// refused at load with a message naming what is wrong, and an export with the paged graph but no
// segments serves paged on the graph. kv_cache_dtype int8 (the native runner's int8 cache) answers
// the same chats, its first greedy token the float cache's best or a near-tie of it within the
// cache's rounding (this random model's logits are nearly flat), and is refused at load on the
// Optimum graph. Without attention_backend a load takes the fastest backend its files allow: the
// native kernel over the segments, else the paged graph, else the Optimum graph, and says so.
import { copyFile, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_REPOSITORY } from '../../models/default-repository.js';
import { configOf, loadModel, makeRepository, startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;
const withBackend = (name: string, backend: string, kvCacheDtype?: string) =>
  configOf(
    'qwen3-tiny',
    name,
    (text) =>
      `${text}\nparameters: { key: "attention_backend" value: { string_value: "${backend}" } }\n${kvCacheDtype ? `parameters: { key: "kv_cache_dtype" value: { string_value: "${kvCacheDtype}" } }\n` : ''}`,
  );

beforeAll(async () => {
  const repository = await makeRepository([
    { name: 'tiny-pkv', from: 'qwen3-tiny', config: withBackend('tiny-pkv', 'past_key_values') },
    { name: 'tiny-paged', from: 'qwen3-tiny', config: withBackend('tiny-paged', 'paged') },
    { name: 'tiny-paged-onnx', from: 'qwen3-tiny', config: withBackend('tiny-paged-onnx', 'paged_onnx') },
    { name: 'tiny-flash', from: 'qwen3-tiny', config: withBackend('tiny-flash', 'flash') },
    { name: 'tiny-paged-int8', from: 'qwen3-tiny', config: withBackend('tiny-paged-int8', 'paged', 'int8') },
    { name: 'tiny-pkv-int8', from: 'qwen3-tiny', config: withBackend('tiny-pkv-int8', 'past_key_values', 'int8') },
    { name: 'tiny-default', from: 'qwen3-tiny', config: configOf('qwen3-tiny', 'tiny-default') },
  ]);
  // An export with only the Optimum graph (copied: links out of a version directory are refused).
  const source = join(DEFAULT_REPOSITORY, 'qwen3-tiny', '1');
  const optimumOnly = join(repository, 'tiny-nopaged', '1');
  await mkdir(join(optimumOnly, 'onnx'), { recursive: true });
  for (const file of ['config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json', 'onnx/model.onnx']) await copyFile(join(source, file), join(optimumOnly, file));
  await writeFile(join(repository, 'tiny-nopaged', 'config.pbtxt'), withBackend('tiny-nopaged', 'paged'));
  // An export with the paged graph but not its segments (converted before they existed, say).
  const graphOnly = join(repository, 'tiny-nosegments', '1');
  await mkdir(join(graphOnly, 'onnx'), { recursive: true });
  for (const file of ['config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json', 'onnx/model.onnx', 'onnx/model_paged.onnx'])
    await copyFile(join(source, file), join(graphOnly, file));
  await writeFile(join(repository, 'tiny-nosegments', 'config.pbtxt'), withBackend('tiny-nosegments', 'paged'));
  // The same two exports with no backend named: the default follows the files.
  for (const [name, from] of [
    ['tiny-default-nopaged', optimumOnly],
    ['tiny-default-nosegments', graphOnly],
  ] as const) {
    await mkdir(join(repository, name, '1', 'onnx'), { recursive: true });
    for (const file of ['config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json', 'onnx/model.onnx', 'onnx/model_paged.onnx']) {
      await copyFile(join(from, file), join(repository, name, '1', file)).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== 'ENOENT') throw error;
      });
    }
    await writeFile(join(repository, name, 'config.pbtxt'), configOf('qwen3-tiny', name));
  }
  server = await startTestServer(repository, ['--model-control-mode', 'explicit']);
}, 120_000);
afterAll(async () => server?.stop());

const load = (name: string) => loadModel(server, name);

describe('attention_backend', () => {
  it('serves the paged graph with the same greedy text as the Optimum graph, under concurrent streams', async () => {
    expect(await load('tiny-pkv')).toEqual({ status: 200, error: '' });
    expect(await load('tiny-paged')).toEqual({ status: 200, error: '' });
    expect(await load('tiny-paged-onnx')).toEqual({ status: 200, error: '' });
    expect(await load('tiny-paged-int8')).toEqual({ status: 200, error: '' });
    const fileOf = async (model: string) => ((await (await fetch(`${server.http}/v2/models/${model}/config`)).json()) as { default_model_filename: string }).default_model_filename;
    expect(await fileOf('tiny-paged')).toBe('onnx/model_paged.segments');
    expect(await fileOf('tiny-paged-onnx')).toBe('onnx/model_paged.onnx');
    expect(server.logs.some((line) => line.includes('tiny-paged:1: precision fp32: loading onnx/model_paged.segments (attention_backend paged)'))).toBe(true);
    expect(server.logs.some((line) => line.includes('tiny-paged-onnx:1: precision fp32: loading onnx/model_paged.onnx (attention_backend paged_onnx)'))).toBe(true);
    // The variant the segments carry is the paged graph's (fp32), as /v1/models and the metrics show it.
    const card = (await (await fetch(`${server.http}/v1/models/tiny-paged`)).json()) as { precision: string; model_file: string };
    expect(card).toMatchObject({ precision: 'fp32', model_file: 'onnx/model_paged.segments' });

    const client = new OpenAI({ baseURL: `${server.http}/v1`, apiKey: 'unused' });
    const prompts = ['Hello there', 'Write a haiku about the sea', 'What is 2 + 2?', 'List three colours', 'Tell me a story about a fox who learned to fly over the mountains', 'Hi'];
    const chat = async (model: string, content: string): Promise<string> => {
      const stream = await client.chat.completions.create({ model, messages: [{ role: 'user', content }], max_tokens: 12, temperature: 0, stream: true });
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
      return text;
    };
    // All twelve streams at once: both engines batch, arrivals stagger into running decodes.
    const [optimum, native, graph, int8Cache] = await Promise.all(['tiny-pkv', 'tiny-paged', 'tiny-paged-onnx', 'tiny-paged-int8'].map((model) => Promise.all(prompts.map((p) => chat(model, p)))));
    expect(native).toEqual(optimum);
    expect(graph).toEqual(optimum);
    // An int8 cache rounds K/V (and scores with its queries rounded the same way): on this
    // random-weight model, whose logits are nearly flat (top two often within 0.01), greedy text
    // may take a near-tie of the float cache's token. What holds: its first token is the float
    // cache's best or within the cache's rounding of it (the runner test bounds the logits, 1e-3
    // relative; measured shifts here ≤ 0.013).
    expect(int8Cache!.every((text) => text.length > 0)).toBe(true);
    const firstToken = async (model: string, content: string) => {
      const r = await client.chat.completions.create({ model, messages: [{ role: 'user', content }], max_tokens: 1, temperature: 0, logprobs: true, top_logprobs: 5 });
      return r.choices[0]!.logprobs!.content![0]!;
    };
    for (const content of prompts) {
      const [float, rounded] = await Promise.all([firstToken('tiny-pkv', content), firstToken('tiny-paged-int8', content)]);
      const best = float.top_logprobs[0]!.logprob;
      const taken = float.top_logprobs.find((t) => t.token === rounded.token);
      expect(taken, `${content}: int8 took ${rounded.token}, not among ${JSON.stringify(float.top_logprobs)}`).toBeDefined();
      expect(best - taken!.logprob, content).toBeLessThan(0.05);
    }
    expect(native!.every((text) => text.length > 0)).toBe(true);
  }, 120_000);

  it('refuses an int8 cache on the Optimum graph at load, naming what it needs', async () => {
    const { status, error } = await load('tiny-pkv-int8');
    expect(status).toBeGreaterThanOrEqual(400);
    expect(error).toContain('kv_cache_dtype int8 on a float32 model needs attention_backend paged with the segmented decoder and the native kernel');
  });

  it('refuses an unknown backend name, listing the choices', async () => {
    const { status, error } = await load('tiny-flash');
    expect(status).toBe(400);
    expect(error).toContain("parameter attention_backend must be one of past_key_values, paged, paged_onnx, got 'flash'");
  });

  it('serves paged on the paged graph where an export has no segments', async () => {
    expect(await load('tiny-nosegments')).toEqual({ status: 200, error: '' });
    expect(server.logs.some((line) => line.includes('tiny-nosegments:1: precision fp32: loading onnx/model_paged.onnx (attention_backend paged)'))).toBe(true);
  });

  it('defaults to the fastest backend the files allow, and logs the choice', async () => {
    for (const name of ['tiny-default', 'tiny-default-nosegments', 'tiny-default-nopaged']) expect(await load(name)).toEqual({ status: 200, error: '' });
    const logged = (text: string) => server.logs.some((line) => line.includes(text));
    expect(logged('tiny-default:1: precision fp32: loading onnx/model_paged.segments (attention_backend paged, default)')).toBe(true);
    expect(logged('tiny-default:1: attention backend: paged (native kernel) — default')).toBe(true);
    expect(logged('tiny-default-nosegments:1: precision fp32: loading onnx/model_paged.onnx (attention_backend paged, default)')).toBe(true);
    expect(logged('tiny-default-nosegments:1: attention backend: paged (ONNX graph attention) — default')).toBe(true);
    expect(logged('tiny-default-nopaged:1: precision fp32: loading onnx/model.onnx (attention_backend past_key_values, default)')).toBe(true);
    expect(logged('tiny-default-nopaged:1: attention backend: past_key_values — default')).toBe(true);
    // A backend named is logged as the parameter's choice.
    expect(logged('tiny-pkv:1: attention backend: past_key_values — attention_backend parameter')).toBe(true);
  });

  it('refuses paged on an export without the paged graph, naming the missing file', async () => {
    const { status, error } = await load('tiny-nopaged');
    expect(status).toBeGreaterThanOrEqual(400);
    expect(error).toContain('onnx/model_paged.onnx');
  });
});
