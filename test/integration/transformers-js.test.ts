// The built decoder directory must load in transformers.js unchanged and generate exactly what
// our own greedy loop over onnxruntime-node generates.
import { AutoModelForCausalLM, AutoTokenizer, env } from '@huggingface/transformers';
import * as ort from 'onnxruntime-node';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_REPOSITORY } from '../../models/default-repository.js';
import { greedy } from '../support/decoder.js';

env.allowRemoteModels = false;
env.localModelPath = DEFAULT_REPOSITORY;

describe('qwen3-tiny in transformers.js', () => {
  it.each(['fp32', 'fp16', 'q8'] as const)('loads the %s variant and generates our greedy tokens', async (dtype) => {
    const tokenizer = await AutoTokenizer.from_pretrained('qwen3-tiny/1');
    const model = await AutoModelForCausalLM.from_pretrained('qwen3-tiny/1', { dtype, device: 'cpu' });
    const prompt = tokenizer.apply_chat_template([{ role: 'user', content: 'Hello, Conveyor!' }], {
      add_generation_prompt: true,
      tokenize: false,
    }) as string;
    expect(prompt).toContain('<|im_start|>assistant');
    const inputs = tokenizer(prompt);
    const output = (await model.generate({ ...inputs, max_new_tokens: 12, do_sample: false })) as { tolist(): bigint[][] };
    const promptIds = Array.from(inputs.input_ids.data as BigInt64Array, Number);
    const generated = output.tolist()[0]!.slice(promptIds.length).map(Number);

    const file = { fp32: 'model.onnx', fp16: 'model_fp16.onnx', q8: 'model_quantized.onnx' }[dtype];
    const session = await ort.InferenceSession.create(join(DEFAULT_REPOSITORY, 'qwen3-tiny/1/onnx', file), { intraOpNumThreads: 1 });
    const ours = await greedy(session, ort, promptIds, 12);
    // transformers.js stops at an EOS id; compare up to where it stopped.
    expect(generated).toEqual(ours.slice(0, generated.length));
    expect(generated.length).toBeGreaterThan(0);
    await model.dispose();
  });
});
