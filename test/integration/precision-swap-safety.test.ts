// What a precision swap that cannot happen leaves behind, through the real server: a corrupt
// variant file and a missing one fail the reload with the reason while the old variant keeps
// serving (index row READY, /v1/models unchanged, streams in flight finish); a variant that would
// not fit --memory-budget-bytes beside the one serving is refused before anything loads or
// unloads; one that fits swaps in and the accounting drops back to one variant.
import { copyFile, mkdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_REPOSITORY } from '../../models/default-repository.js';
import { configOf, startTestServer, type TestServer } from '../support/server.js';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';

const KV_BYTES = 4 * 2 ** 20;
const BIG_VARIANT_BYTES = 48 * 2 ** 20;
let server: TestServer;
let client: OpenAI;
let sizes: { q4: number; q4f16: number };
let budget: number;

beforeAll(async () => {
  // A decoder directory of real files (links out of a version directory are refused): the q4 and
  // q4f16 graphs, a truncated fp16 file, and a uint8 file too large for the budget.
  const repository = await mkdtemp(join(tmpdir(), 'conveyor-swap-safety-'));
  const source = join(DEFAULT_REPOSITORY, 'qwen3-tiny', '1');
  const version = join(repository, 'decoder', '1');
  await mkdir(join(version, 'onnx'), { recursive: true });
  for (const file of ['config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json']) await copyFile(join(source, file), join(version, file));
  for (const file of ['model_q4.onnx', 'model_q4f16.onnx']) await copyFile(join(source, 'onnx', file), join(version, 'onnx', file));
  await writeFile(join(version, 'onnx', 'model_fp16.onnx'), Buffer.from('not an onnx graph'));
  await writeFile(join(version, 'onnx', 'model_uint8.onnx'), Buffer.alloc(BIG_VARIANT_BYTES));
  const config = configOf('qwen3-tiny', 'decoder', (text) => text.replace('string_value: "fp32"', 'string_value: "q4"').replace('string_value: "33554432"', `string_value: "${KV_BYTES}"`));
  await writeFile(join(repository, 'decoder', 'config.pbtxt'), config);
  sizes = { q4: (await stat(join(version, 'onnx', 'model_q4.onnx'))).size, q4f16: (await stat(join(version, 'onnx', 'model_q4f16.onnx'))).size };
  // Room for q4 and q4f16 side by side (a swap's overlap), not for the uint8 file beside q4.
  budget = sizes.q4 + sizes.q4f16 + 2 * KV_BYTES + 2 ** 20;
  server = await startTestServer(repository, ['--model-control-mode', 'explicit', '--load-model', 'decoder', '--memory-budget-bytes', String(budget)]);
  client = new OpenAI({ baseURL: `${server.http}/v1`, apiKey: 'unused', maxRetries: 0 });
}, 180_000);
afterAll(async () => server?.stop());

const json = async <T>(path: string, init?: RequestInit): Promise<T> => (await (await fetch(`${server.http}${path}`, init)).json()) as T;

async function swap(precision: string): Promise<{ status: number; error: string }> {
  const config = await json<{ parameters: Record<string, { string_value: string }> }>('/v2/models/decoder/config');
  config.parameters.precision = { string_value: precision };
  const response = await fetch(`${server.http}/v2/repository/models/decoder/load`, { method: 'POST', body: JSON.stringify({ parameters: { config: JSON.stringify(config) } }) });
  const text = await response.text();
  return { status: response.status, error: text === '' ? '' : (JSON.parse(text) as { error: string }).error };
}

/** What a client sees serving: the card's variant and the index row. */
async function serving(): Promise<unknown> {
  const card = await json<{ precision: string; model_file: string }>('/v1/models/decoder');
  const [row] = await json<{ state: string; reason: string; precision: string }[]>('/v2/repository/index', { method: 'POST', body: '{}' });
  return { precision: card.precision, file: card.model_file, row };
}

const complete = async (): Promise<number> => (await client.completions.create({ model: 'decoder', prompt: 'Still serving', max_tokens: 8, temperature: 0 })).usage!.completion_tokens;

describe('precision swap safety', () => {
  const servingQ4 = { precision: 'q4', file: 'onnx/model_q4.onnx', row: { name: 'decoder', version: '1', state: 'READY', reason: '', precision: 'q4' } };

  it('a corrupt variant file fails the swap with the reason; the old variant serves on, streams in flight finish', async () => {
    const before = server.manager.loadedBytes();
    expect(before).toBe(sizes.q4 + KV_BYTES);
    const inFlight = Array.from({ length: 3 }, () => complete());
    const { status, error } = await swap('fp16');
    expect(status).toBeGreaterThanOrEqual(400);
    expect(error).toContain("failed to load 'decoder'");
    expect(error).toContain('decoder/1/onnx/model_fp16.onnx');
    expect((await Promise.all(inFlight)).every((n) => n > 0)).toBe(true);
    expect(await serving()).toEqual(servingQ4);
    expect(await complete()).toBeGreaterThan(0);
    expect(server.manager.loadedBytes()).toBe(before);
  }, 300_000);

  it('a missing variant file fails the swap naming the file; nothing changes', async () => {
    expect(await swap('bnb4')).toEqual({ status: 400, error: expect.stringContaining("model file 'decoder/1/onnx/model_bnb4.onnx' not found") });
    expect(await serving()).toEqual(servingQ4);
    expect(await complete()).toBeGreaterThan(0);
  }, 300_000);

  it('a variant that would not fit the memory budget beside the one serving is refused before anything loads', async () => {
    const before = server.manager.loadedBytes();
    const { status, error } = await swap('uint8');
    expect(status).toBe(400);
    expect(error).toContain(`not enough memory under --memory-budget-bytes ${budget}`);
    expect(error).toContain(`needs ${BIG_VARIANT_BYTES + KV_BYTES} bytes (${BIG_VARIANT_BYTES} weights + ${KV_BYTES} KV cache) beside the ${before} bytes loaded`);
    // Refused by the accounting: the backend never opened the file.
    expect(server.logs.some((line) => line.includes('loading onnx/model_uint8.onnx'))).toBe(false);
    expect(await serving()).toEqual(servingQ4);
    expect(await complete()).toBeGreaterThan(0);
    expect(server.manager.loadedBytes()).toBe(before);
  }, 300_000);

  it('a variant that fits swaps in, and the accounting drops back to one variant', async () => {
    expect(await swap('q4f16')).toEqual({ status: 200, error: '' });
    expect(await serving()).toEqual({ precision: 'q4f16', file: 'onnx/model_q4f16.onnx', row: { ...servingQ4.row, precision: 'q4f16' } });
    expect(await complete()).toBeGreaterThan(0);
    expect(server.manager.loadedBytes()).toBe(sizes.q4f16 + KV_BYTES);
    // The same accounting in Triton's statistics field.
    const stats = await json<{ model_stats: { memory_usage: unknown }[] }>('/v2/models/decoder/stats');
    expect(stats.model_stats[0]!.memory_usage).toEqual([{ type: 'CPU', id: 0, byte_size: sizes.q4f16 + KV_BYTES }]);
  }, 300_000);
});
