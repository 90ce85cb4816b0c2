import { describe, expect, it } from 'vitest';
import type { ModelConfig } from '../../../src/contracts/model-config.js';
import type { Tensor } from '../../../src/contracts/tensors.js';
import { classify } from '../../../src/serving/classification.js';
import { validateInferRequest } from '../../../src/serving/validate-infer.js';
import { input, modelConfig, output } from '../../support/model-config.js';

const config: ModelConfig = modelConfig({
  max_batch_size: 4,
  input: [input('ids', 'TYPE_INT64', [-1]), input('image', 'TYPE_FP32', [2, 3], { reshape: { shape: [6] }, optional: true })],
  output: [output('out', 'TYPE_FP32', [3])],
});
const ids = (shape: number[]): Tensor => ({ name: 'ids', datatype: 'INT64', shape, data: new BigInt64Array(shape.reduce((a, b) => a * b, 1)) });
const request = (inputs: Tensor[], outputs?: string[]) => ({ model: 'm', parameters: {}, inputs, ...(outputs ? { outputs: outputs.map((name) => ({ name, parameters: {} })) } : {}) });

describe('validateInferRequest', () => {
  it('accepts a batched request, applies reshape, defaults to every output', () => {
    const image: Tensor = { name: 'image', datatype: 'FP32', shape: [2, 2, 3], data: new Float32Array(12) };
    const result = validateInferRequest(config, request([ids([2, 5]), image]));
    expect(result.batchSize).toBe(2);
    expect(result.inputs[1]!.shape).toEqual([2, 6]);
    expect(result.outputs.map((o) => o.name)).toEqual(['out']);
  });

  it.each([
    ['an unknown input', request([ids([1, 3]), { name: 'x', datatype: 'FP32', shape: [1], data: new Float32Array(1) }]), /unexpected inference input 'x'/],
    ['a missing input', request([]), /missing: ids/],
    ['a wrong datatype', request([{ name: 'ids', datatype: 'INT32', shape: [1, 2], data: new Int32Array(2) }]), /data-type is 'INT32', but model 'm' expects 'INT64'/],
    ['a wrong rank', request([ids([3])]), /model expects \[-1,-1\] but got \[3\]/],
    ['a batch over max_batch_size', request([ids([5, 2])]), /batch-size must be <= 4/],
    ['an element count that does not match the shape', request([{ name: 'ids', datatype: 'INT64', shape: [1, 3], data: new BigInt64Array(2) }]), /has 2 elements but shape \[1,3\] needs 3/],
    ['an unknown output', request([ids([1, 1])], ['nope']), /unexpected inference output 'nope'/],
    ['a duplicated input', request([ids([1, 1]), ids([1, 1])]), /given more than once/],
    ['a zero-length variable dimension', request([ids([1, 0])]), /input 'ids' has a zero-length dimension 1 \(shape \[1,0\]\); model 'm' cannot take an empty tensor/],
    ['a batch of 0', request([ids([0, 3])]), /batch-size must be <= 4/],
  ])('rejects %s', (_, req, message) => {
    expect(() => validateInferRequest(config, req)).toThrow(message);
  });

  it('rejects inputs that disagree on the batch size', () => {
    const image: Tensor = { name: 'image', datatype: 'FP32', shape: [3, 2, 3], data: new Float32Array(18) };
    expect(() => validateInferRequest(config, request([ids([2, 5]), image]))).toThrow(/disagree on the batch size/);
  });
});

describe('classify', () => {
  it('returns the top K per row as value:index:label, highest first', () => {
    const logits: Tensor = { name: 'out', datatype: 'FP32', shape: [2, 3], data: Float32Array.of(0.5, 2, 1, 3, -1, 0) };
    const result = classify(logits, 2, ['cat', 'dog', 'eel'], true);
    expect(result.shape).toEqual([2, 2]);
    expect((result.data as Uint8Array[]).map((b) => new TextDecoder().decode(b))).toEqual(['2.000000:1:dog', '1.000000:2:eel', '3.000000:0:cat', '0.000000:2:eel']);
  });
  it('omits the label when there is no labels file', () => {
    const logits: Tensor = { name: 'out', datatype: 'FP32', shape: [3], data: Float32Array.of(0.5, 2, 1) };
    expect(new TextDecoder().decode((classify(logits, 1, undefined, false).data as Uint8Array[])[0])).toBe('2.000000:1');
  });
});
