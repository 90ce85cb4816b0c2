// The memory estimate behind --memory-budget-bytes and --max-loaded-model-bytes: the weights
// file the precision picks (with its external data) per served version, plus an LLM's KV budget.
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { estimateModelBytes } from '../../../src/serving/memory-budget.js';

/** The llm backend's kv_cache_bytes when a model sets none. */
const DEFAULT_KV_CACHE_BYTES = 256 * 2 ** 20;
import { modelConfigFromJson } from '../../../src/repository/config/index.js';

async function modelDir(files: Record<string, number>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'conveyor-footprint-'));
  for (const [path, bytes] of Object.entries(files)) {
    await mkdir(join(dir, path, '..'), { recursive: true });
    await writeFile(join(dir, path), Buffer.alloc(bytes));
  }
  return dir;
}

const parameters = (values: Record<string, string>) => Object.fromEntries(Object.entries(values).map(([k, v]) => [k, { string_value: v }]));

describe('estimateModelBytes', () => {
  it("an LLM: its precision's file and external data, plus kv_cache_bytes", async () => {
    const dir = await modelDir({ '1/onnx/model.onnx': 4000, '1/onnx/model_quantized.onnx': 1000, '1/onnx/model_quantized.onnx_data': 300 });
    const config = modelConfigFromJson(JSON.stringify({ name: 'llm', backend: 'llm', parameters: parameters({ precision: 'int8', kv_cache_bytes: '500' }) }), 'llm');
    expect(await estimateModelBytes(dir, config, 'llm')).toBe(1800);
    const fp32 = modelConfigFromJson(JSON.stringify({ name: 'llm', backend: 'llm' }), 'llm');
    expect(await estimateModelBytes(dir, fp32, 'llm')).toBe(4000 + DEFAULT_KV_CACHE_BYTES);
  });

  it('a classic model: model.onnx in each version the policy serves, once per instance worker', async () => {
    const dir = await modelDir({ '1/model.onnx': 700, '2/model.onnx': 900, '2/model_fp16.onnx': 450 });
    const latest = modelConfigFromJson(JSON.stringify({ name: 'cnn', backend: 'onnxruntime', instance_group: [{ count: 1, kind: 'KIND_CPU' }] }), 'cnn');
    expect(await estimateModelBytes(dir, latest, 'cnn')).toBe(900);
    const all = modelConfigFromJson(JSON.stringify({ name: 'cnn', backend: 'onnxruntime', version_policy: { all: {} }, instance_group: [{ count: 3, kind: 'KIND_CPU' }] }), 'cnn');
    expect(await estimateModelBytes(dir, all, 'cnn')).toBe(3 * 1600);
  });
});
