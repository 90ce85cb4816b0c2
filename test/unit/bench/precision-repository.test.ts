// The repository `bench -- precision` serves: one model per family and variant (plus the swap
// model), each config the committed one at that precision, --threads reaching every model as its
// intra_op_thread_count and --attention-backend the decoders as attention_backend (both read by
// the backends), or nothing where the run leaves the defaults.

import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildRepository, type ServedSettings } from '../../../bench/scenarios/precision/repository.js';

const roots: string[] = [];
afterAll(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});

async function configs(served: ServedSettings): Promise<Record<string, string>> {
  const { root } = await buildRepository('tiny', ['qwen3', 'bert'], ['fp32', 'q4'], 16 << 20, served, () => {});
  roots.push(root);
  const names = ['qwen3-fp32', 'qwen3-q4', 'qwen3-swap', 'bert-fp32', 'bert-swap'];
  return Object.fromEntries(names.map((name) => [name, readFileSync(join(root, name, 'config.pbtxt'), 'utf8')]));
}

describe('bench precision repository', () => {
  it('sets every model’s intra_op_thread_count from --threads, and the decoders’ attention_backend', async () => {
    const texts = await configs({ threads: 1, attentionBackend: 'paged_onnx' });
    expect(Object.keys(texts)).toHaveLength(5); // bert has no 4-bit variant
    for (const [name, text] of Object.entries(texts)) {
      expect(text, name).toContain(`name: "${name}"`);
      expect(text.match(/key: "intra_op_thread_count" value: \{ string_value: "1" \}/g), name).toHaveLength(1);
    }
    for (const name of ['qwen3-fp32', 'qwen3-q4', 'qwen3-swap']) expect(texts[name]).toContain('key: "attention_backend" value: { string_value: "paged_onnx" }');
    for (const name of ['bert-fp32', 'bert-swap']) expect(texts[name]).not.toContain('attention_backend');
    expect(texts['qwen3-q4']).toContain('key: "precision" value: { string_value: "q4" }');
    expect(texts['qwen3-q4']).toContain('key: "kv_cache_bytes" value: { string_value: "16777216" }');
  });

  it('leaves the server’s defaults alone without --threads or --attention-backend', async () => {
    for (const text of Object.values(await configs({}))) expect(text).not.toMatch(/intra_op_thread_count|attention_backend/);
  });
});
