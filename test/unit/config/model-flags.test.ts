// The `serve --model` flags (src/config/model-flags.ts): parsed and refused from the one table,
// listed in USAGE with their choices, and written into the generated config as the llm
// parameters the backend reads.
import { describe, expect, it } from 'vitest';
import { MODEL_FLAGS, modelFlagsUsage } from '../../../src/config/model-flags.js';
import { parseServerOptions, USAGE } from '../../../src/config/server-options.js';
import { KV_CACHE_DTYPES } from '../../../src/contracts/engine-messages.js';
import { parseModelConfig } from '../../../src/repository/config/index.js';
import { singleModelConfig } from '../../../src/repository/single-model.js';
import { ATTENTION_BACKENDS, PRECISION_VARIANTS } from '../../../src/repository/variants.js';
import { attentionBackendOf, kvCacheDtypeOf } from '../../../src/serving/llm-parameters.js';
import { parseSpeculativeConfig } from '../../../src/serving/speculative-config.js';

const withModel = (...argv: string[]) => parseServerOptions(['--model', '/tmp/m', ...argv]);

describe('serve --model flags', () => {
  it("reads vLLM's flags into the options", () => {
    const o = withModel('--precision', 'int8', '--kv-cache-dtype', 'fp16', '--max-model-len', '2048', '--max-num-seqs', '4', '--attention-backend', 'paged_onnx');
    expect(o).toMatchObject({ precision: 'int8', kvCacheDtype: 'fp16', maxModelLen: 2048, maxNumSeqs: 4, attentionBackend: 'paged_onnx' });
    // transformers.js' aliases are the precision table's too.
    expect(withModel('--precision', 'q8').precision).toBe('q8');
    const none = withModel();
    for (const name of Object.keys(MODEL_FLAGS)) expect(none).not.toHaveProperty(name);
  });

  it('accepts every value of each vocabulary, as its own table declares it', () => {
    for (const { precision } of PRECISION_VARIANTS) expect(withModel('--precision', precision).precision).toBe(precision);
    for (const dtype of KV_CACHE_DTYPES) expect(withModel('--kv-cache-dtype', dtype).kvCacheDtype).toBe(dtype);
    for (const backend of ATTENTION_BACKENDS) expect(withModel('--attention-backend', backend).attentionBackend).toBe(backend);
  });

  it.each([
    [['--precision', 'fp8'], /--precision must be one of fp32, fp16, int8, uint8, q4, q4f16, bnb4, q8, quantized, got 'fp8'/],
    [['--kv-cache-dtype', 'fp8'], /--kv-cache-dtype must be one of auto, fp16, int8, got 'fp8'/],
    [['--attention-backend', 'flash'], /--attention-backend must be one of past_key_values, paged, paged_onnx, got 'flash'/],
    [['--max-model-len', '0'], /--max-model-len must be a positive integer, got '0'/],
    [['--max-model-len', '1.5'], /--max-model-len must be a positive integer/],
    [['--max-model-len', ''], /--max-model-len must be a positive integer/],
    [['--max-num-seqs=-1'], /--max-num-seqs must be a positive integer/],
    [['--max-num-seqs', 'many'], /--max-num-seqs must be a positive integer, got 'many'/],
    [['--speculative-config', '{method: ngram}'], /--speculative-config must be a JSON object such as '\{"method": "ngram", "num_speculative_tokens": 4\}': /],
    [['--speculative-config', '[4]'], /--speculative-config must be a JSON object such as .*, got '\[4\]'/],
  ])('refuses %j', (argv, message) => {
    expect(() => withModel(...argv)).toThrow(message);
  });

  it('each needs --model: a repository model sets its parameter in config.pbtxt', () => {
    for (const spec of Object.values(MODEL_FLAGS)) {
      const value = spec.kind === 'choice' ? spec.choices[0]! : spec.kind === 'count' ? '8' : spec.example;
      const message = `${spec.flag} needs --model (a repository model sets the ${spec.parameter} parameter in its config.pbtxt)`;
      expect(() => parseServerOptions([spec.flag, value])).toThrow(message);
      expect(() => parseServerOptions(['--model-repository', '/r', spec.flag, value])).toThrow(message);
    }
  });

  it('--help lists every flag with its choices', () => {
    for (const spec of Object.values(MODEL_FLAGS)) expect(USAGE).toMatch(new RegExp(`^  ${spec.flag} ${spec.metavar} +\\S`, 'm'));
    expect(USAGE).toContain('--precision P                fp32 | fp16 | int8 | uint8 | q4 | q4f16 | bnb4: ');
    expect(USAGE).toContain('--kv-cache-dtype TYPE        auto | fp16 | int8: ');
    for (const line of modelFlagsUsage().split('\n')) expect(line.length).toBeLessThanOrEqual(100);
  });

  it('writes each flag into the generated config as the llm parameter the backend reads', () => {
    const o = withModel('--kv-cache-dtype', 'int8', '--max-model-len', '64', '--max-num-seqs', '1', '--attention-backend', 'paged');
    const config = parseModelConfig(singleModelConfig('m', 'q4', o), 'config.pbtxt', 'm');
    const parameter = (key: string) => config.parameters[key]?.string_value;
    expect([parameter('precision'), parameter('max_model_len'), parameter('max_num_seqs')]).toEqual(['q4', '64', '1']);
    expect(kvCacheDtypeOf(config)).toBe('int8');
    expect(attentionBackendOf(config)).toBe('paged');
    // JSON-valued: escaped in the config's text, read back as the same JSON (and refused by the backend's own check at load, naming the field).
    const spec = withModel('--speculative-config', '{ "method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4 }');
    const read = parseModelConfig(singleModelConfig('m', 'fp32', spec), 'config.pbtxt', 'm');
    expect(JSON.parse(read.parameters['speculative_config']!.string_value)).toEqual({ method: 'ngram', num_speculative_tokens: 3, prompt_lookup_max: 4 });
    expect(parseSpeculativeConfig(read.parameters['speculative_config']!.string_value)).toMatchObject({ method: 'ngram', numSpeculativeTokens: 3, promptLookupMin: 4, promptLookupMax: 4 });
    // Only the flags given: the rest keep the backend's defaults.
    expect(Object.keys(parseModelConfig(singleModelConfig('m', 'fp32'), 'config.pbtxt', 'm').parameters)).toEqual(['precision']);
  });
});
