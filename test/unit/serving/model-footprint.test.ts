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

  it("an LLM with a draft model: the draft's weights too, and its KV pool (as many positions as the target's, at its own KV width)", async () => {
    const dir = await modelDir({ '1/onnx/model_paged.onnx': 4000, 'draft/onnx/model_paged.onnx': 600, 'draft/onnx/model_paged_fp16.onnx': 300 });
    const shape = (layers: number) => JSON.stringify({ num_hidden_layers: layers, num_attention_heads: 4, num_key_value_heads: 2, hidden_size: 64 });
    await writeFile(join(dir, '1', 'config.json'), shape(4));
    await writeFile(join(dir, 'draft', 'config.json'), shape(1));
    const withDraft = (spec: object) =>
      modelConfigFromJson(JSON.stringify({ name: 'llm', backend: 'llm', parameters: parameters({ kv_cache_bytes: '800', speculative_config: JSON.stringify(spec) }) }), 'llm');
    expect(await estimateModelBytes(dir, withDraft({ method: 'draft_model', model: '../draft', num_speculative_tokens: 3 }), 'llm')).toBe(4000 + 800 + 600 + 200);
    expect(await estimateModelBytes(dir, withDraft({ method: 'draft_model', model: join(dir, 'draft'), num_speculative_tokens: 3, quantization: 'fp16' }), 'llm')).toBe(4000 + 800 + 300 + 200);
    // n-gram lookup, or a draft that is not there (its load then fails, naming it), adds nothing.
    expect(await estimateModelBytes(dir, withDraft({ method: 'ngram', num_speculative_tokens: 3 }), 'llm')).toBe(4800);
    expect(await estimateModelBytes(dir, withDraft({ method: 'draft_model', model: '../missing', num_speculative_tokens: 3 }), 'llm')).toBe(4800);
  });

  it('a classic model: model.onnx in each version the policy serves, once per instance worker', async () => {
    const dir = await modelDir({ '1/model.onnx': 700, '2/model.onnx': 900, '2/model_fp16.onnx': 450 });
    const latest = modelConfigFromJson(JSON.stringify({ name: 'cnn', backend: 'onnxruntime', instance_group: [{ count: 1, kind: 'KIND_CPU' }] }), 'cnn');
    expect(await estimateModelBytes(dir, latest, 'cnn')).toBe(900);
    const all = modelConfigFromJson(JSON.stringify({ name: 'cnn', backend: 'onnxruntime', version_policy: { all: {} }, instance_group: [{ count: 3, kind: 'KIND_CPU' }] }), 'cnn');
    expect(await estimateModelBytes(dir, all, 'cnn')).toBe(3 * 1600);
  });
});
