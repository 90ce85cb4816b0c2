// `conveyor convert` end to end: the tiny decoder's own weights written as a Hugging Face
// checkpoint (fp32, two shards), converted by the real CLI in a child process (with --paged: the
// paged-attention graph too), then served beside the built qwen3-tiny, on both attention backends:
// greedy completions agree token for token.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, describe, expect, it } from 'vitest';
import { writeQwen3Checkpoint } from '../../models/qwen3/checkpoint.js';
import { DECODER_CONFIGS } from '../../models/qwen3/config.js';
import { initDecoderWeights } from '../../models/qwen3/weights.js';
import { addModel, configOf, makeRepository, startTestServer } from '../support/server.js';

const root = await mkdtemp(join(tmpdir(), 'convert-cli-'));
afterAll(() => rm(root, { recursive: true, force: true }));

function cli(args: readonly string[]): Promise<{ code: number; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'convert', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdout.resume();
  return new Promise((resolve) => child.on('close', (code) => resolve({ code: code ?? -1, stderr })));
}

describe('conveyor convert (CLI)', () => {
  it('converts a sharded checkpoint that then serves the same greedy text as the built model', async () => {
    const [hf, out] = [join(root, 'hf'), join(root, 'out')];
    await writeQwen3Checkpoint(hf, DECODER_CONFIGS.tiny, initDecoderWeights(DECODER_CONFIGS.tiny), { shards: 2 });
    const { code, stderr } = await cli([hf, out, '--paged']);
    expect(stderr).toContain('[convert] Qwen3ForCausalLM: 4 layers, hidden 64, 4 heads (2 kv), vocab 151936, → fp32');
    expect(stderr).toContain('[convert] [46/46] model.norm.weight');
    expect(code).toBe(0);
    expect(existsSync(join(out, 'onnx', 'model.onnx'))).toBe(true);
    expect(existsSync(join(out, 'onnx', 'model.onnx_data'))).toBe(true);
    expect(existsSync(join(out, 'onnx', 'model_paged.onnx'))).toBe(true);

    const repository = await makeRepository([{ name: 'qwen3-tiny', from: 'qwen3-tiny', config: configOf('qwen3-tiny', 'qwen3-tiny') }]);
    await addModel(repository, { name: 'converted', from: 'qwen3-tiny', config: configOf('qwen3-tiny', 'converted') });
    const paged = configOf('qwen3-tiny', 'converted-paged', (text) => `${text}\nparameters: { key: "attention_backend" value: { string_value: "paged" } }\n`);
    await addModel(repository, { name: 'converted-paged', from: 'qwen3-tiny', config: paged });
    // Version 1 of both is the converter's output, not the built directory.
    for (const name of ['converted', 'converted-paged']) {
      await rm(join(repository, name, '1'));
      await symlink(out, join(repository, name, '1'), 'dir');
    }
    const server = await startTestServer(repository);
    try {
      const client = new OpenAI({ baseURL: `${server.http}/v1`, apiKey: 'unused', maxRetries: 0 });
      const complete = (model: string) => client.completions.create({ model, prompt: 'The quick brown fox', max_tokens: 12, temperature: 0, logprobs: 1 });
      const [built, converted, convertedPaged] = [await complete('qwen3-tiny'), await complete('converted'), await complete('converted-paged')];
      expect(converted.choices[0]!.text).toBe(built.choices[0]!.text);
      expect(convertedPaged.choices[0]!.text).toBe(built.choices[0]!.text);
      expect(converted.choices[0]!.logprobs!.tokens).toEqual(built.choices[0]!.logprobs!.tokens);
      const [a, b] = [built.choices[0]!.logprobs!.token_logprobs!, converted.choices[0]!.logprobs!.token_logprobs!];
      a.forEach((lp, i) => expect(Math.abs(lp - b[i]!)).toBeLessThan(1e-4));
    } finally {
      await server.stop();
    }
  }, 300_000);

  it('bad input: usage errors exit 2, bad checkpoints exit 1, each with its message', async () => {
    const precision = await cli([join(root, 'hf'), join(root, 'x'), '--precision', 'q3']);
    expect(precision).toMatchObject({ code: 2, stderr: expect.stringContaining('--precision q3: expected one of fp32, fp16, int8, q4, q4f16') });
    const missing = await cli([join(root, 'nowhere'), join(root, 'x')]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^conveyor convert: .*nowhere: no config.json/m);
    expect(missing.stderr).not.toContain('    at ');
  }, 120_000);
});
