import { describe, expect, it } from 'vitest';
import type { ModelConfig, ModelInput } from '../../../../src/contracts/model-config.js';
import { decodeRawInferRequest } from '../../../../src/server/http/codec/raw-request.js';
import { input as modelInput, modelConfig, output } from '../../../support/model-config.js';
import { bytesOf, errorOf } from './support.js';

function config(maxBatchSize: number, input: Partial<ModelInput>[]): ModelConfig {
  return modelConfig({
    max_batch_size: maxBatchSize,
    input: input.map((t, i) => modelInput(`in${i}`, 'TYPE_FP32', [], t)),
    output: [output('out', 'TYPE_FP32', [-1])],
  });
}

const fp32 = (...values: number[]) => bytesOf(new Float32Array(values));

describe('raw binary requests (Inference-Header-Content-Length: 0)', () => {
  it("takes the single input's datatype and dims from the config, all outputs binary", () => {
    const request = decodeRawInferRequest('m', '3', config(0, [{ dims: [2, 2] }]), fp32(1, 2, 3, 4));
    expect(request).toEqual({
      model: 'm',
      version: '3',
      parameters: { binary_data_output: true },
      inputs: [{ name: 'in0', datatype: 'FP32', shape: [2, 2], data: new Float32Array([1, 2, 3, 4]) }],
    });
  });

  it("treats a batching model's request as batch 1", () => {
    const request = decodeRawInferRequest('m', undefined, config(8, [{ dims: [3] }]), fp32(1, 2, 3));
    expect(request.inputs[0]!.shape).toEqual([1, 3]);
    expect(request.version).toBeUndefined();
  });

  it('infers the one variable dimension from the byte count', () => {
    const request = decodeRawInferRequest('m', undefined, config(4, [{ data_type: 'TYPE_INT64', dims: [-1, 2] }]), bytesOf(new BigInt64Array([1n, 2n, 3n, 4n, 5n, 6n])));
    expect(request.inputs[0]).toMatchObject({ datatype: 'INT64', shape: [1, 3, 2] });
    expect(request.inputs[0]!.data).toEqual(new BigInt64Array([1n, 2n, 3n, 4n, 5n, 6n]));
  });

  it('takes a BYTES body as one element without a length prefix', () => {
    const request = decodeRawInferRequest('m', undefined, config(1, [{ data_type: 'TYPE_STRING', dims: [1] }]), Buffer.from('raw text'));
    expect(request.inputs[0]).toMatchObject({ datatype: 'BYTES', shape: [1, 1] });
    expect((request.inputs[0]!.data as Uint8Array[]).map((e) => Buffer.from(e).toString())).toEqual(['raw text']);
  });

  it('needs a model with exactly one input', () => {
    const message = (n: number) => `a raw binary request (Inference-Header-Content-Length: 0) needs a model with exactly one input; 'm' has ${n}`;
    expect(errorOf(() => decodeRawInferRequest('m', undefined, config(0, [{}, {}]), fp32(1))).message).toBe(message(2));
    expect(errorOf(() => decodeRawInferRequest('m', undefined, config(0, []), fp32(1))).message).toBe(message(0));
  });

  it('allows at most one variable dimension', () => {
    expect(errorOf(() => decodeRawInferRequest('m', undefined, config(0, [{ dims: [-1, -1] }]), fp32(1))).message).toBe(
      "a raw binary request for input 'in0' allows at most one variable dimension, the model has [-1,-1]",
    );
  });

  it('needs BYTES dims [1]', () => {
    expect(errorOf(() => decodeRawInferRequest('m', undefined, config(0, [{ data_type: 'TYPE_STRING', dims: [2] }]), Buffer.from('x'))).message).toBe(
      "a raw binary request for BYTES input 'in0' needs dims [1], the model has [2]",
    );
  });

  it('rejects a body that does not fit the dims', () => {
    expect(errorOf(() => decodeRawInferRequest('m', undefined, config(0, [{ dims: [-1, 2] }]), fp32(1, 2, 3))).message).toBe("raw binary input 'in0': 12 bytes do not fit shape [-1,2] of FP32");
    expect(errorOf(() => decodeRawInferRequest('m', undefined, config(0, [{ dims: [2] }]), fp32(1, 2, 3))).message).toBe("raw binary input 'in0': 12 bytes do not fit shape [2] of FP32");
  });
});
