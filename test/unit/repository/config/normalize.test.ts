// Triton's defaults (NormalizeModelConfig) as the config layer applies them.
import { describe, expect, it } from 'vitest';
import { normalizeModelConfig } from '../../../../src/repository/config/index.js';
import { parseConfig } from './helpers.js';
import { COMMON, DEFAULT_OPTIMIZATION, group } from './fixtures.js';

const parse = (text: string, gpus?: number[]) => parseConfig(text, 'm', gpus);

describe('normalization defaults', () => {
  it('fills a minimal onnxruntime config the way Triton prints it', () => {
    expect(parse('backend: "onnxruntime"')).toEqual({
      ...COMMON,
      name: 'm',
      platform: 'onnxruntime_onnx',
      backend: 'onnxruntime',
      max_batch_size: 0,
      input: [],
      output: [],
      instance_group: [group('m', 'KIND_CPU', 2)],
      default_model_filename: 'model.onnx',
      parameters: {},
    });
  });

  it('fills a minimal llm config: one CPU instance, no platform, no default file', () => {
    expect(parse('backend: "llm"')).toEqual({
      ...COMMON,
      name: 'm',
      platform: '',
      backend: 'llm',
      max_batch_size: 0,
      input: [],
      output: [],
      instance_group: [group('m', 'KIND_CPU', 1)],
      default_model_filename: '',
      parameters: {},
    });
  });

  it('pairs platform onnxruntime_onnx with backend onnxruntime both ways', () => {
    const fromPlatform = parse('platform: "onnxruntime_onnx"');
    expect([fromPlatform.backend, fromPlatform.platform]).toEqual(['onnxruntime', 'onnxruntime_onnx']);
    const both = parse('platform: "onnxruntime_onnx" backend: "onnxruntime"');
    expect([both.backend, both.platform]).toEqual(['onnxruntime', 'onnxruntime_onnx']);
  });

  it('keeps a given default_model_filename and version policy', () => {
    const config = parse('backend: "onnxruntime" default_model_filename: "model_fp16.onnx" version_policy { all {} }');
    expect(config.default_model_filename).toBe('model_fp16.onnx');
    expect(config.version_policy).toEqual({ all: {} });
  });

  it('sets preferred_batch_size to [max_batch_size] when dynamic batching leaves it empty', () => {
    expect(parse('backend: "onnxruntime" max_batch_size: 16 dynamic_batching { }').dynamic_batching).toEqual({
      preferred_batch_size: [16],
      max_queue_delay_microseconds: 0,
      preserve_ordering: false,
      priority_levels: 0,
      default_priority_level: 0,
      priority_queue_policy: {},
    });
    expect(parse('backend: "onnxruntime" max_batch_size: 16 dynamic_batching { preferred_batch_size: 4 }').dynamic_batching!.preferred_batch_size).toEqual([4]);
    // Without batching there is no size to prefer.
    expect(parse('backend: "onnxruntime" dynamic_batching { }').dynamic_batching!.preferred_batch_size).toEqual([]);
    expect(parse('backend: "onnxruntime" max_batch_size: 16').dynamic_batching).toBeUndefined();
  });

  it('names groups <model>_<index>, and gives unset counts the per-kind default', () => {
    expect(parse('backend: "onnxruntime" instance_group [ { kind: KIND_CPU }, { name: "mine" count: 3 kind: KIND_CPU }, { kind: KIND_GPU } ]').instance_group).toEqual([
      group('m_0', 'KIND_CPU', 2),
      group('mine', 'KIND_CPU', 3),
      group('m_2', 'KIND_GPU', 1),
    ]);
    expect(parse('backend: "llm" instance_group { kind: KIND_CPU }').instance_group).toEqual([group('m_0', 'KIND_CPU', 1)]);
  });

  it('resolves KIND_AUTO and default groups against the GPUs present', () => {
    expect(parse('backend: "onnxruntime" instance_group { }').instance_group).toEqual([group('m_0', 'KIND_CPU', 2)]);
    expect(parse('backend: "onnxruntime" instance_group { }', [0, 1]).instance_group).toEqual([group('m_0', 'KIND_GPU', 1, [0, 1])]);
    expect(parse('backend: "onnxruntime" instance_group { gpus: [ 1 ] }', [0, 1]).instance_group).toEqual([group('m_0', 'KIND_GPU', 1, [1])]);
    // A listed GPU that is absent sends a KIND_AUTO group to the CPU.
    expect(parse('backend: "onnxruntime" instance_group { gpus: [ 3 ] }', [0]).instance_group).toEqual([group('m_0', 'KIND_CPU', 2)]);
    expect(parse('backend: "onnxruntime"', [0, 1]).instance_group).toEqual([group('m', 'KIND_GPU', 1, [0, 1])]);
    // KIND_GPU on a machine without GPUs stays KIND_GPU: the session factory falls back and logs.
    expect(parse('backend: "onnxruntime" instance_group { kind: KIND_GPU count: 2 }').instance_group).toEqual([group('m_0', 'KIND_GPU', 2)]);
  });

  it('adds pinned-memory settings to the optimization policy, keeping what is set', () => {
    expect(parse('backend: "onnxruntime"').optimization).toEqual(DEFAULT_OPTIMIZATION);
    expect(parse('backend: "onnxruntime" optimization { output_pinned_memory { } graph { level: 1 } }').optimization).toEqual({
      graph: { level: 1 },
      priority: 'PRIORITY_DEFAULT',
      input_pinned_memory: { enable: true },
      output_pinned_memory: { enable: false },
      gather_kernel_buffer_threshold: 0,
      eager_batching: false,
    });
  });

  it('is idempotent', () => {
    const config = parse('backend: "onnxruntime" max_batch_size: 4 dynamic_batching {} instance_group [ {}, {} ]');
    const again = normalizeModelConfig(structuredClone(config), 'm');
    expect(again).toEqual(config);
  });
});
