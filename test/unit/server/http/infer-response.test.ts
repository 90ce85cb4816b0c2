import { describe, expect, it } from 'vitest';
import type { InferRequest, InferResponse } from '../../../../src/contracts/infer.js';
import type { Tensor } from '../../../../src/contracts/tensors.js';
import { binaryOutputChooser, encodeInferResponse } from '../../../../src/server/http/codec/infer-response.js';
import { bytesOf, errorOf, framed } from './support.js';

const probs: Tensor = { name: 'probs', datatype: 'FP32', shape: [1, 2], data: new Float32Array([0.25, 0.75]) };
const ids: Tensor = { name: 'ids', datatype: 'INT64', shape: [2], data: new BigInt64Array([9223372036854775807n, -1n]) };
const text: Tensor = { name: 'text', datatype: 'BYTES', shape: [2], data: [new TextEncoder().encode('ab'), new TextEncoder().encode('')] };
const flags: Tensor = { name: 'flags', datatype: 'BOOL', shape: [2], data: new Uint8Array([1, 0]) };

function response(outputs: Tensor[], extra: Partial<InferResponse> = {}): InferResponse {
  return { model: 'm', version: '1', outputs, ...extra };
}

function request(parameters: InferRequest['parameters'], outputs?: InferRequest['outputs']): InferRequest {
  return { model: 'm', parameters, inputs: [], ...(outputs ? { outputs } : {}) };
}

/** Splits an encoded body into its parsed JSON header and its binary part. */
function split(body: Buffer, headerLength: number | undefined): { json: { outputs: Record<string, unknown>[] } & Record<string, unknown>; binary: Buffer } {
  const end = headerLength ?? body.byteLength;
  return { json: JSON.parse(body.toString('utf8', 0, end)), binary: body.subarray(end) };
}

describe('binary output choice', () => {
  it('follows binary_data per output over binary_data_output', () => {
    const choose = binaryOutputChooser(
      request({ binary_data_output: true }, [
        { name: 'a', parameters: { binary_data: false } },
        { name: 'b', parameters: {} },
      ]),
    );
    expect([choose('a'), choose('b'), choose('c')]).toEqual([false, true, true]);
    const json = binaryOutputChooser(request({}, [{ name: 'a', parameters: { binary_data: true } }]));
    expect([json('a'), json('b')]).toEqual([true, false]);
  });
});

describe('inference responses', () => {
  it('encodes an all-JSON response with model, version, id and parameters', () => {
    const encoded = encodeInferResponse(response([probs, ids, text, flags], { id: 'r1', parameters: { seq: 5n, note: 'x' } }), () => false);
    expect(encoded.contentType).toBe('application/json');
    expect(encoded.headerLength).toBeUndefined();
    expect(encoded.body.toString()).toBe(
      '{"id":"r1","model_name":"m","model_version":"1","parameters":{"seq":5,"note":"x"},"outputs":[' +
        '{"name":"probs","datatype":"FP32","shape":[1,2],"data":[0.25,0.75]},' +
        '{"name":"ids","datatype":"INT64","shape":[2],"data":[9223372036854775807,-1]},' +
        '{"name":"text","datatype":"BYTES","shape":[2],"data":["ab",""]},' +
        '{"name":"flags","datatype":"BOOL","shape":[2],"data":[true,false]}]}',
    );
  });

  it('leaves out id and parameters when the response has none', () => {
    const encoded = encodeInferResponse(response([]), () => false);
    expect(JSON.parse(encoded.body.toString())).toEqual({ model_name: 'm', model_version: '1', outputs: [] });
  });

  it('appends binary outputs after the JSON in output order, each with binary_data_size', () => {
    const half: Tensor = { name: 'half', datatype: 'FP16', shape: [1], data: new Uint16Array([0x3c00]) };
    const encoded = encodeInferResponse(response([probs, ids, text, half]), (name) => name !== 'ids');
    expect(encoded.contentType).toBe('application/octet-stream');
    const { json, binary } = split(encoded.body, encoded.headerLength);
    expect(json.outputs).toEqual([
      { name: 'probs', datatype: 'FP32', shape: [1, 2], parameters: { binary_data_size: 8 } },
      // biome-ignore lint/correctness/noPrecisionLoss: the body holds INT64 max exactly; JSON.parse rounds it to the same double as this literal
      { name: 'ids', datatype: 'INT64', shape: [2], data: [9223372036854775807, -1] },
      { name: 'text', datatype: 'BYTES', shape: [2], parameters: { binary_data_size: 10 } },
      { name: 'half', datatype: 'FP16', shape: [1], parameters: { binary_data_size: 2 } },
    ]);
    expect(binary.equals(Buffer.concat([bytesOf(probs.data as Float32Array), framed('ab', ''), Buffer.from([0x00, 0x3c])]))).toBe(true);
  });

  it('gives the header length as the JSON byte length, multi-byte characters included', () => {
    const encoded = encodeInferResponse(response([probs], { id: 'é' }), () => true);
    expect(encoded.headerLength).toBe(encoded.body.byteLength - 8);
    expect(() => JSON.parse(encoded.body.toString('utf8', 0, encoded.headerLength))).not.toThrow();
  });

  it('refuses FP16 outputs in JSON', () => {
    const half: Tensor = { name: 'half', datatype: 'FP16', shape: [1], data: new Uint16Array([0x3c00]) };
    expect(errorOf(() => encodeInferResponse(response([half]), () => false)).message).toBe("output 'half': FP16 has no JSON representation; request it with binary_data");
  });
});
