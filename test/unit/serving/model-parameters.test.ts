// The llm backend's parser parameters: vLLM's names, checked when the model loads, each refusal
// naming the parameter and the parsers there are.

import { describe, expect, it } from 'vitest';
import { attentionBackendOf, kvCacheDtypeOf, reasoningParserOf, toolCallParserOf } from '../../../src/serving/llm-parameters.js';
import { singleModelConfig } from '../../../src/repository/single-model.js';
import { parseModelConfig } from '../../../src/repository/config/index.js';
import { modelConfig } from '../../support/model-config.js';

const withParameter = (key: string, value: string) => modelConfig({ parameters: { [key]: { string_value: value } } });

describe('reasoning_parser', () => {
  it('reads qwen3 and deepseek_r1; absent or empty is none', () => {
    expect(reasoningParserOf(withParameter('reasoning_parser', 'qwen3'))).toBe('qwen3');
    expect(reasoningParserOf(withParameter('reasoning_parser', 'deepseek_r1'))).toBe('deepseek_r1');
    expect(reasoningParserOf(withParameter('reasoning_parser', ''))).toBeNull();
    expect(reasoningParserOf(modelConfig())).toBeNull();
  });

  it('refuses an unknown name, listing the parsers', () => {
    expect(() => reasoningParserOf(withParameter('reasoning_parser', 'o1'))).toThrow("parameter reasoning_parser must be one of qwen3, deepseek_r1, got 'o1'");
    // Names are own keys only, never Object.prototype's.
    expect(() => reasoningParserOf(withParameter('reasoning_parser', 'toString'))).toThrow(/must be one of/);
    expect(() => toolCallParserOf(withParameter('tool_call_parser', 'qwen3'))).toThrow(/tool_call_parser must be one of/);
  });

  it('tool_call_parser auto reads the chat template: hermes for <tool_call>, none where it shows no format', () => {
    const auto = withParameter('tool_call_parser', 'auto');
    expect(toolCallParserOf(auto, '{{ "<tool_call>" }}')).toBe('hermes');
    expect(toolCallParserOf(auto, '{{ "<｜tool▁calls▁begin｜>" }}')).toBe('deepseek_v3');
    expect(toolCallParserOf(auto, '{{ messages }}')).toBeNull();
    expect(toolCallParserOf(auto, null)).toBeNull();
    expect(toolCallParserOf(withParameter('tool_call_parser', 'pythonic'))).toBe('pythonic');
  });

  it('serve --model --reasoning-parser / --tool-call-parser / --attention-backend write their parameters into the generated config', () => {
    const config = parseModelConfig(singleModelConfig('m', 'fp32', { toolCallParser: 'hermes', reasoningParser: 'deepseek_r1', attentionBackend: 'paged' }), 'config.pbtxt', 'm');
    expect(reasoningParserOf(config)).toBe('deepseek_r1');
    expect(toolCallParserOf(config)).toBe('hermes');
    expect(attentionBackendOf(config)).toBe('paged');
    // None named: the load takes the fastest the files allow (llmModelFile).
    expect(attentionBackendOf(parseModelConfig(singleModelConfig('m', 'fp32'), 'config.pbtxt', 'm'))).toBeNull();
    expect(() => attentionBackendOf(withParameter('attention_backend', 'flash'))).toThrow("parameter attention_backend must be one of past_key_values, paged, paged_onnx, got 'flash'");
    expect(reasoningParserOf(parseModelConfig(singleModelConfig('m', 'fp32'), 'config.pbtxt', 'm'))).toBeNull();
  });

  it('kv_cache_dtype: auto by default, fp16 or int8 when asked, anything else refused listing the choices', () => {
    expect(kvCacheDtypeOf(parseModelConfig(singleModelConfig('m', 'fp32'), 'config.pbtxt', 'm'))).toBe('auto');
    expect(kvCacheDtypeOf(withParameter('kv_cache_dtype', 'fp16'))).toBe('fp16');
    expect(kvCacheDtypeOf(withParameter('kv_cache_dtype', 'int8'))).toBe('int8');
    expect(() => kvCacheDtypeOf(withParameter('kv_cache_dtype', 'fp8'))).toThrow("parameter kv_cache_dtype must be one of auto, fp16, int8, got 'fp8'");
  });
});
