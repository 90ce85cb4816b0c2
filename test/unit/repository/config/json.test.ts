// The config endpoint's JSON (Triton's ModelConfigToJson) and the load API's JSON override.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MAX_CONFIG_CHARS } from '../../../../src/repository/config/ast.js';
import { modelConfigFromJson, modelConfigToJson, modelConfigToJsonValue, parseModelConfig } from '../../../../src/repository/config/index.js';
import { expectError } from './helpers.js';

const REPOSITORY = join(import.meta.dirname, '..', '..', '..', '..', 'models', 'repository');

describe('modelConfigToJson', () => {
  it('prints like Triton: declaration order, defaults, enum names, numbers, unset messages left out', () => {
    const config = parseModelConfig(
      'name: "model_test" backend: "onnxruntime" max_batch_size: 4\n' +
        'input { name: "images" data_type: TYPE_FP32 dims: [ 3, -1, -1 ] }\n' +
        'output { name: "output" data_type: TYPE_FP32 dims: [ 10 ] }\n' +
        'dynamic_batching { }',
      'config.pbtxt',
      'model_test',
    );
    expect(modelConfigToJson(config)).toBe(
      '{"name":"model_test","platform":"onnxruntime_onnx","backend":"onnxruntime","runtime":"","version_policy":{"latest":{"num_versions":1}},' +
        '"max_batch_size":4,"input":[{"name":"images","data_type":"TYPE_FP32","format":"FORMAT_NONE","dims":[3,-1,-1],"is_shape_tensor":false,' +
        '"allow_ragged_batch":false,"optional":false,"is_non_linear_format_io":false}],"output":[{"name":"output","data_type":"TYPE_FP32","dims":[10],' +
        '"label_filename":"","is_shape_tensor":false,"is_non_linear_format_io":false}],"batch_input":[],"batch_output":[],' +
        '"optimization":{"priority":"PRIORITY_DEFAULT","input_pinned_memory":{"enable":true},"output_pinned_memory":{"enable":true},' +
        '"gather_kernel_buffer_threshold":0,"eager_batching":false},"dynamic_batching":{"preferred_batch_size":[4],"max_queue_delay_microseconds":0,' +
        '"preserve_ordering":false,"priority_levels":0,"default_priority_level":0,"priority_queue_policy":{}},"instance_group":[{"name":"model_test",' +
        '"kind":"KIND_CPU","count":2,"gpus":[],"secondary_devices":[],"profile":[],"passive":false,"host_policy":""}],' +
        '"default_model_filename":"model.onnx","cc_model_filenames":{},"metric_tags":{},"parameters":{},"model_warmup":[]}',
    );
  });

  it('prints set messages, maps and oneof members, and a decoupled transaction policy', () => {
    const config = parseModelConfig(
      'backend: "llm" model_transaction_policy { decoupled: true } response_cache { enable: false }\n' +
        'input { name: "t" data_type: TYPE_STRING dims: [ 1 ] reshape { shape: [] } }\n' +
        'model_warmup { name: "w" batch_size: 1 inputs { key: "t" value { data_type: TYPE_STRING dims: [ 1 ] zero_data: true } } }\n' +
        'model_metrics { metric_control { histogram_options { buckets: [ 0.5, inf, nan ] } } }',
      'config.pbtxt',
      'm',
    );
    const printed = modelConfigToJsonValue(config);
    expect(printed.input).toEqual([
      {
        name: 't',
        data_type: 'TYPE_STRING',
        format: 'FORMAT_NONE',
        dims: [1],
        reshape: { shape: [] },
        is_shape_tensor: false,
        allow_ragged_batch: false,
        optional: false,
        is_non_linear_format_io: false,
      },
    ]);
    expect(printed.model_warmup).toEqual([{ name: 'w', batch_size: 1, inputs: { t: { data_type: 'TYPE_STRING', dims: [1], zero_data: true } }, count: 0 }]);
    expect(printed.model_transaction_policy).toEqual({ decoupled: true });
    expect(printed.response_cache).toEqual({ enable: false });
    expect(printed.model_metrics).toEqual({ metric_control: [{ histogram_options: { buckets: [0.5, 'Infinity', 'NaN'] } }] });
    expect(Object.keys(printed).slice(-5)).toEqual(['parameters', 'model_warmup', 'model_transaction_policy', 'response_cache', 'model_metrics']);
  });

  it('prints version_policy all as an empty object, and specific versions as numbers', () => {
    const all = parseModelConfig('backend: "onnxruntime" version_policy { all {} }', 'f', 'm');
    expect(modelConfigToJsonValue(all).version_policy).toEqual({ all: {} });
    const specific = parseModelConfig('backend: "onnxruntime" version_policy { specific { versions: [ 2, 5 ] } }', 'f', 'm');
    expect(modelConfigToJson(specific)).toContain('"version_policy":{"specific":{"versions":[2,5]}}');
  });
});

describe('modelConfigFromJson', () => {
  it('refuses a config past MAX_CONFIG_CHARS before reading it, in both formats', () => {
    const padded = `{"backend":"onnxruntime","name":"${'m'.repeat(MAX_CONFIG_CHARS)}"}`;
    const started = performance.now();
    expect(() => modelConfigFromJson(padded, 'm')).toThrow(/config: the configuration is \d+ characters long; the most accepted is 262144/);
    expect(() => parseModelConfig(`# ${'x'.repeat(MAX_CONFIG_CHARS)}`, 'm/config.pbtxt', 'm')).toThrow(/m\/config.pbtxt: the configuration is/);
    expect(performance.now() - started).toBeLessThan(200);
  });

  // Every model of the default repository: the tiny models, the ensembles and their TypeScript steps.
  const committed = readdirSync(REPOSITORY).filter((name) => existsSync(join(REPOSITORY, name, 'config.pbtxt')));
  it('finds the committed configs', () => expect(committed).toEqual(expect.arrayContaining(['bert-tiny', 'qwen3-tiny', 'resnet-tiny', 'text-embedder', 'image-classifier'])));
  it.each(committed)('round-trips the committed %s config', (name) => {
    const config = parseModelConfig(readFileSync(join(REPOSITORY, name, 'config.pbtxt'), 'utf8'), 'config.pbtxt', name);
    expect(modelConfigFromJson(modelConfigToJson(config), name)).toEqual(config);
  });

  it('round-trips a config with maps, oneofs, queue policies and floats', () => {
    const config = parseModelConfig(
      'backend: "onnxruntime" max_batch_size: 8\n' +
        'input { name: "x" data_type: TYPE_FP32 dims: [ 4 ] }\n' +
        'dynamic_batching { priority_levels: 2 default_priority_level: 1 default_queue_policy { timeout_action: DELAY default_timeout_microseconds: 7 }\n' +
        '  priority_queue_policy { key: 2 value { max_queue_size: 3 } } }\n' +
        'version_policy { specific { versions: 4 } }\n' +
        'model_warmup { name: "w" batch_size: 2 inputs { key: "x" value { data_type: TYPE_FP32 dims: [ 4 ] random_data: true } } }\n' +
        'model_metrics { metric_control { histogram_options { buckets: [ -inf, 0.25, nan ] } } }\n' +
        'metric_tags { key: "a" value: "b" }',
      'config.pbtxt',
      'm',
    );
    expect(modelConfigFromJson(modelConfigToJson(config), 'm')).toEqual(config);
  });

  it('accepts camelCase names, quoted 64-bit integers and enum numbers, and normalizes', () => {
    const config = modelConfigFromJson(
      '{"name": "m", "backend": "onnxruntime", "maxBatchSize": 2, "input": [{"name": "x", "dataType": 11, "dims": ["-1", "3"]}],' +
        ' "dynamicBatching": {"maxQueueDelayMicroseconds": "100"}, "instanceGroup": [{"kind": "KIND_CPU"}], "parameters": {"p": {"stringValue": "v"}}}',
      'm',
    );
    expect(config.input[0]!.data_type).toBe('TYPE_FP32');
    expect(config.input[0]!.dims).toEqual([-1, 3]);
    expect(config.dynamic_batching).toEqual({
      preferred_batch_size: [2],
      max_queue_delay_microseconds: 100,
      preserve_ordering: false,
      priority_levels: 0,
      default_priority_level: 0,
      priority_queue_policy: {},
    });
    expect(config.instance_group[0]!.count).toBe(2);
    expect(config.parameters).toEqual({ p: { string_value: 'v' } });
  });

  it('reports errors as config:line:column', () => {
    expectError(() => modelConfigFromJson('{\n  "backend": "onnxruntime",\n  "max_batch": 4\n}', 'm'), "config:3:3: unknown field 'max_batch' in ModelConfig");
    expectError(() => modelConfigFromJson('{"name": "x", "backend": "onnxruntime"}', 'm'), "config:1:2: model name 'x' does not match its directory name 'm'");
    expectError(
      () => modelConfigFromJson('{"backend": "onnxruntime", "max_batch_size": 2, "dynamic_batching": {"preferred_batch_size": [4]}}', 'm'),
      'config:1:95: dynamic_batching preferred_batch_size 4 is larger than max_batch_size 2',
    );
    expectError(
      () => modelConfigFromJson('{"backend": "onnxruntime", "ensemble_scheduling": {}}', 'm'),
      "config:1:28: ensemble_scheduling is set, but the platform is 'onnxruntime_onnx'; only platform 'ensemble' takes it",
    );
    expectError(() => modelConfigFromJson('{"backend": "onnxruntime",}', 'm'), "config:1:27: expected a member name in double quotes, found '}'");
    expectError(() => modelConfigFromJson('', 'm'), 'config:1:1: expected a JSON object, found end of input');
  });
});
