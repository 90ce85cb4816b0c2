// speculative_config method draft_model through the real server: qwen3-tiny with a draft (its
// first three layers, built in setup from the same seed) answers greedy completions with the same
// text as the same model without it, counts the draft's proposals in the spec_decode series, and
// a draft the server cannot use is refused at load (400) naming the field: a missing directory, a
// tokenizer with another vocabulary, a missing model field, a field vLLM's draft models do not take
// here, a precision variant the draft does not have.
import { rm, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_REPOSITORY } from '../../models/default-repository.js';
import { buildTruncatedDraft } from '../support/draft-model.js';
import { configOf, loadModel, makeRepository, startTestServer, type TestServer } from '../support/server.js';

const withSpec = (name: string, json: object) =>
  configOf('qwen3-tiny', name, (text) => `${text}\nparameters: { key: "speculative_config" value: { string_value: ${JSON.stringify(JSON.stringify(json))} } }\n`);

let server: TestServer;
let draftDir: string;
beforeAll(async () => {
  draftDir = await buildTruncatedDraft(3);
  const repository = await makeRepository([
    { name: 'plain', from: 'qwen3-tiny', config: configOf('qwen3-tiny', 'plain') },
    // Relative to the version directory: <repository>/draft/1/../draft-model.
    { name: 'draft', from: 'qwen3-tiny', config: withSpec('draft', { method: 'draft_model', model: '../draft-model', num_speculative_tokens: 3 }) },
    // Not beside the repository's version link but beside the directory it links to (serve --model's layout).
    { name: 'linked', from: 'qwen3-tiny', config: withSpec('linked', { method: 'draft_model', model: '../../qwen3-tiny/1', num_speculative_tokens: 3 }) },
    { name: 'missing', from: 'qwen3-tiny', config: withSpec('missing', { method: 'draft_model', model: 'no-such-draft', num_speculative_tokens: 3 }) },
    // bert-tiny's WordPiece vocabulary is not Qwen3's.
    { name: 'other-vocab', from: 'qwen3-tiny', config: withSpec('other-vocab', { method: 'draft_model', model: join(DEFAULT_REPOSITORY, 'bert-tiny', '1'), num_speculative_tokens: 3 }) },
    { name: 'no-model', from: 'qwen3-tiny', config: withSpec('no-model', { method: 'draft_model', num_speculative_tokens: 3 }) },
    { name: 'unknown-field', from: 'qwen3-tiny', config: withSpec('unknown-field', { method: 'draft_model', model: '../draft-model', num_speculative_tokens: 3, draft_tensor_parallel_size: 1 }) },
    { name: 'no-variant', from: 'qwen3-tiny', config: withSpec('no-variant', { method: 'draft_model', model: '../draft-model', num_speculative_tokens: 3, quantization: 'q4' }) },
  ]);
  for (const name of ['draft', 'no-variant']) await symlink(draftDir, join(repository, name, 'draft-model'), 'dir');
  server = await startTestServer(repository, ['--model-control-mode', 'explicit', '--load-model', 'plain', '--load-model', 'draft']);
}, 180_000);
afterAll(async () => {
  await server?.stop();
  if (draftDir) await rm(draftDir, { recursive: true, force: true });
});

describe('speculative_config method draft_model', () => {
  it('answers greedy requests with the same text as without it, and counts the draft proposals', async () => {
    const client = new OpenAI({ baseURL: `${server.http}/v1`, apiKey: 'unused', maxRetries: 0 });
    const complete = async (model: string, prompt: string) => (await client.completions.create({ model, prompt, max_tokens: 32, temperature: 0 })).choices[0]!.text;
    for (const prompt of ['one two three one two three', 'the cat sat on the mat', 'Hello']) expect(await complete('draft', prompt), prompt).toBe(await complete('plain', prompt));
    expect(server.logs.some((line) => /draft:1: speculative decoding: draft model .*model_paged\.segments \(paged-native runner, 3 layers, its own KV pool of \d+ blocks/.test(line))).toBe(true);
    const metrics = await (await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`)).text();
    const value = (name: string) => Number(new RegExp(`^conveyor:${name}\\{model_name="draft"\\} (\\S+)$`, 'm').exec(metrics)?.[1] ?? Number.NaN);
    expect(value('spec_decode_num_drafts_total')).toBeGreaterThan(0);
    expect(value('spec_decode_num_draft_tokens_total')).toBeGreaterThanOrEqual(value('spec_decode_num_drafts_total'));
    // How many of a three-layer random draft's proposals hold depends on which positions the cost gate lets it draft at (timing); the full-depth draft below accepts.
    expect(value('spec_decode_num_accepted_tokens_total')).toBeLessThanOrEqual(value('spec_decode_num_draft_tokens_total'));
  });

  it('finds a relative draft beside the directory a version links to, and a draft that agrees with the target has its proposals accepted', async () => {
    expect(await loadModel(server, 'linked')).toEqual({ status: 200, error: '' });
    expect(server.logs.some((line) => /linked:1: speculative decoding: draft model .*qwen3-tiny\/1\/onnx\/model_paged\.segments/.test(line))).toBe(true);
    // Its draft is the target itself: every proposal is the target's own greedy token.
    const client = new OpenAI({ baseURL: `${server.http}/v1`, apiKey: 'unused', maxRetries: 0 });
    const text = (await client.completions.create({ model: 'linked', prompt: 'one two three one two three', max_tokens: 24, temperature: 0 })).choices[0]!.text;
    expect(text).toBe((await client.completions.create({ model: 'plain', prompt: 'one two three one two three', max_tokens: 24, temperature: 0 })).choices[0]!.text);
    const metrics = await (await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`)).text();
    const value = (name: string) => Number(new RegExp(`^conveyor:${name}\\{model_name="linked"\\} (\\S+)$`, 'm').exec(metrics)?.[1] ?? Number.NaN);
    expect(value('spec_decode_num_drafts_total')).toBeGreaterThan(0);
    expect(value('spec_decode_num_accepted_tokens_total')).toBeGreaterThan(0);
  });

  it.each([
    ['missing', "parameter speculative_config: model 'no-such-draft' is not a directory"],
    ['other-vocab', "its tokenizer's vocabulary differs from the target's (30522 tokens against the target's 151669)"],
    ['no-model', "parameter speculative_config: model (the draft model's directory) is required for method draft_model"],
    ['unknown-field', "parameter speculative_config: unknown field 'draft_tensor_parallel_size' for method draft_model"],
    ['no-variant', "parameter speculative_config: model '../draft-model' (quantization q4):"],
  ])('refuses %s at load, naming the field', async (name, message) => {
    const { status, error } = await loadModel(server, name);
    expect(status).toBe(400);
    expect(error).toContain(message);
  });
});
