// Auto-complete from ONNX metadata (Triton's ORT backend behaviour) and the config/model check.
import * as ort from 'onnxruntime-node';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ModelConfig } from '../../../../src/contracts/model-config.js';
import { checkModelMetadata, completeFromModelMetadata, DEFAULT_MAX_BATCH_SIZE, parseModelConfig, type ModelIoMetadata, type TensorMetadata } from '../../../../src/repository/config/index.js';
import { input, output } from './fixtures.js';
import { expectError, parseConfig as parse } from './helpers.js';

const REPOSITORY = join(import.meta.dirname, '..', '..', '..', '..', 'models', 'repository');
const t = (name: string, type: string, shape: (number | string)[]): TensorMetadata => ({ name, type, shape });

/** A BERT-like model: every tensor batched on a symbolic first dimension. */
const BATCHABLE: ModelIoMetadata = {
  inputs: [t('ids', 'int64', ['batch', 'seq']), t('mask', 'int64', ['batch', 'seq'])],
  outputs: [t('hidden', 'float32', ['batch', 'seq', 32]), t('score', 'float16', ['batch'])],
};
/** A model with fixed shapes and a scalar output. */
const FIXED: ModelIoMetadata = {
  inputs: [t('image', 'uint8', [3, 8, 8])],
  outputs: [t('label', 'int32', []), t('probs', 'float64', [10])],
};

describe('completeFromModelMetadata', () => {
  it('leaves non-onnxruntime configs alone', () => {
    const config = parse('backend: "llm"');
    expect(completeFromModelMetadata(config, BATCHABLE)).toBe(config);
  });

  it('fills max_batch_size 4, dynamic batching and every tensor for a batchable model with an empty config', () => {
    const config = parse('backend: "onnxruntime"');
    const before = structuredClone(config);
    const done = completeFromModelMetadata(config, BATCHABLE);
    expect(DEFAULT_MAX_BATCH_SIZE).toBe(4);
    expect(done.max_batch_size).toBe(4);
    expect(done.dynamic_batching).toEqual({
      preferred_batch_size: [4],
      max_queue_delay_microseconds: 0,
      preserve_ordering: false,
      priority_levels: 0,
      default_priority_level: 0,
      priority_queue_policy: {},
    });
    expect(done.input).toEqual([input('ids', 'TYPE_INT64', [-1]), input('mask', 'TYPE_INT64', [-1])]);
    expect(done.output).toEqual([output('hidden', 'TYPE_FP32', [-1, 32]), output('score', 'TYPE_FP16', [1], { reshape: { shape: [] } })]);
    expect(config).toEqual(before);
  });

  it('keeps full shapes and adds no batching for a model that cannot batch', () => {
    const done = completeFromModelMetadata(parse('backend: "onnxruntime"'), FIXED);
    expect(done.max_batch_size).toBe(0);
    expect(done.dynamic_batching).toBeUndefined();
    expect(done.input).toEqual([input('image', 'TYPE_UINT8', [3, 8, 8])]);
    expect(done.output).toEqual([output('label', 'TYPE_INT32', [1]), output('probs', 'TYPE_FP64', [10])]);
  });

  it('keeps a given max_batch_size and existing dynamic batching, filling only the empty section', () => {
    const done = completeFromModelMetadata(parse('backend: "onnxruntime" max_batch_size: 8 output { name: "hidden" data_type: TYPE_FP32 dims: [ -1, 32 ] }'), BATCHABLE);
    expect(done.max_batch_size).toBe(8);
    expect(done.dynamic_batching!.preferred_batch_size).toEqual([8]);
    expect(done.input.map((i) => i.name)).toEqual(['ids', 'mask']);
    expect(done.output.map((o) => o.name)).toEqual(['hidden']);
    const delayed = completeFromModelMetadata(parse('backend: "onnxruntime" max_batch_size: 8 dynamic_batching { max_queue_delay_microseconds: 50 }'), BATCHABLE);
    expect(delayed.dynamic_batching!.max_queue_delay_microseconds).toBe(50);
  });

  it('takes the default max_batch_size from the options; 1 turns no batcher on', () => {
    const one = completeFromModelMetadata(parse('backend: "onnxruntime"'), BATCHABLE, { defaultMaxBatchSize: 1 });
    expect([one.max_batch_size, one.dynamic_batching]).toEqual([1, undefined]);
    const zero = completeFromModelMetadata(parse('backend: "onnxruntime"'), BATCHABLE, { defaultMaxBatchSize: 0 });
    expect(zero.max_batch_size).toBe(0);
    expect(zero.input[0]!.dims).toEqual([-1, -1]);
  });

  it('does not touch a config that declares inputs and outputs (Triton skips auto-complete)', () => {
    const config = parse('backend: "onnxruntime" input { name: "image" data_type: TYPE_UINT8 dims: [ 3, 8, 8 ] } output { name: "probs" data_type: TYPE_FP64 dims: [ 10 ] }');
    expect(completeFromModelMetadata(config, FIXED)).toEqual(config);
  });

  it('refuses a non-zero max_batch_size for a model that cannot batch', () => {
    expectError(
      () => completeFromModelMetadata(parse('backend: "onnxruntime" max_batch_size: 2'), FIXED),
      "model 'm': the model cannot batch (tensor 'image' has shape [3, 8, 8], no variable first dimension) but max_batch_size is 2",
    );
  });

  it('refuses element types the config cannot name', () => {
    expectError(
      () => completeFromModelMetadata(parse('backend: "onnxruntime"'), { inputs: [t('q', 'uint4', [2])], outputs: [] }),
      "model 'm': model input 'q' has element type 'uint4', which has no config data type",
    );
  });

  it('validates the completed config', () => {
    const metadata: ModelIoMetadata = { inputs: [t('x', 'float32', ['n', 2])], outputs: [t('y', 'float32', ['n'])] };
    // Warmup inputs can only be checked once the inputs are known.
    const warmup = parse('backend: "onnxruntime" model_warmup { name: "w" batch_size: 1 inputs { key: "z" value { data_type: TYPE_FP32 dims: [ 2 ] zero_data: true } } }');
    expectError(() => completeFromModelMetadata(warmup, metadata), "model 'm': model_warmup 'w' input 'z' is not an input of the model");
  });
});

describe('checkModelMetadata', () => {
  const declared = (text: string): ModelConfig => parse(`backend: "onnxruntime"\n${text}`);
  const fails = (text: string, metadata: ModelIoMetadata, message: string) => expectError(() => checkModelMetadata(declared(text), metadata), `model 'm': ${message}`);

  it('accepts matching declarations, stricter dims and a subset of outputs', () => {
    checkModelMetadata(
      declared(
        'max_batch_size: 2 input [ { name: "ids" data_type: TYPE_INT64 dims: [ 16 ] }, { name: "mask" data_type: TYPE_INT64 dims: [ -1 ] } ] output { name: "hidden" data_type: TYPE_FP32 dims: [ -1, 32 ] }',
      ),
      BATCHABLE,
    );
    checkModelMetadata(declared('input { name: "image" data_type: TYPE_UINT8 dims: [ 3, 8, 8 ] } output { name: "label" data_type: TYPE_INT32 dims: [ 1 ] }'), FIXED);
    checkModelMetadata(
      declared('max_batch_size: 2 input [ { name: "ids" data_type: TYPE_INT64 dims: [ -1 ] }, { name: "mask" data_type: TYPE_INT64 dims: [ 2, 4 ] reshape { shape: [ 8 ] } } ]'),
      BATCHABLE,
    );
  });

  it('names tensors the model does not have, and model inputs the config lacks', () => {
    fails('input { name: "pixels" data_type: TYPE_UINT8 dims: [ 3, 8, 8 ] }', FIXED, "input 'pixels' is not an input of the model (model inputs: image)");
    fails('output { name: "logits" data_type: TYPE_FP64 dims: [ 10 ] }', FIXED, "output 'logits' is not an output of the model (model outputs: label, probs)");
    fails('max_batch_size: 2 input { name: "ids" data_type: TYPE_INT64 dims: [ -1 ] }', BATCHABLE, "the model's input 'mask' is missing from the config (declared: ids)");
  });

  it('names data type mismatches', () => {
    fails('input { name: "image" data_type: TYPE_FP32 dims: [ 3, 8, 8 ] }', FIXED, "input 'image' has data_type TYPE_FP32 but the model's tensor is uint8 (TYPE_UINT8)");
  });

  it('names shape mismatches, with the batch dimension explained', () => {
    fails('input { name: "image" data_type: TYPE_UINT8 dims: [ 3, 8 ] }', FIXED, "input 'image' has dims [3, 8] but the model's shape is [3, 8, 8]; expected [3, 8, 8]");
    fails('input { name: "image" data_type: TYPE_UINT8 dims: [ 3, -1, 8 ] }', FIXED, "input 'image' has dims [3, -1, 8] but the model's shape is [3, 8, 8]; expected [3, 8, 8]");
    fails(
      'max_batch_size: 2 output { name: "hidden" data_type: TYPE_FP32 dims: [ -1, 16 ] } input [ { name: "ids" data_type: TYPE_INT64 dims: [ -1 ] }, { name: "mask" data_type: TYPE_INT64 dims: [ -1 ] } ]',
      BATCHABLE,
      "output 'hidden' has dims [-1, 16] but the model's shape is [batch, seq, 32]; expected [seq, 32] after the batch dimension",
    );
    fails(
      'max_batch_size: 2 input { name: "ids" data_type: TYPE_INT64 dims: [ 4 ] reshape { shape: [ 2, 2 ] } }',
      BATCHABLE,
      "input 'ids' has reshape [2, 2] but the model's shape is [batch, seq]; expected [seq] after the batch dimension",
    );
    fails(
      'max_batch_size: 2 input { name: "image" data_type: TYPE_UINT8 dims: [ 8, 8 ] }',
      FIXED,
      "input 'image': max_batch_size is 2 but the model's shape [3, 8, 8] has no variable first (batch) dimension",
    );
  });
});

describe('against the built repository models', () => {
  async function metadataOf(file: string): Promise<ModelIoMetadata> {
    const session = await ort.InferenceSession.create(file);
    const describe = (list: readonly ort.InferenceSession.ValueMetadata[]) =>
      list.map((m) => {
        const tensor = m as unknown as TensorMetadata;
        return { name: tensor.name, type: tensor.type, shape: [...tensor.shape] };
      });
    const metadata = { inputs: describe(session.inputMetadata), outputs: describe(session.outputMetadata) };
    await session.release();
    return metadata;
  }

  it.each(['bert-tiny', 'resnet-tiny'])('%s: the committed config matches the model, and an empty config completes to the same tensors', async (name) => {
    const metadata = await metadataOf(join(REPOSITORY, name, '1', 'model.onnx'));
    const config = parseModelConfig(readFileSync(join(REPOSITORY, name, 'config.pbtxt'), 'utf8'), 'config.pbtxt', name);
    expect(completeFromModelMetadata(config, metadata)).toEqual(config);
    const completed = completeFromModelMetadata(parseModelConfig('backend: "onnxruntime"', 'config.pbtxt', name), metadata);
    expect(completed.max_batch_size).toBe(4);
    expect(completed.input.map((i) => [i.name, i.data_type, i.dims])).toEqual(config.input.map((i) => [i.name, i.data_type, i.dims]));
    expect(completed.output.map((o) => [o.name, o.data_type, o.dims])).toEqual(config.output.map((o) => [o.name, o.data_type, o.dims]));
  });
});
