import { describe, expect, it } from 'vitest';
import { decodeInferRequest, parseHeaderLength } from '../../../../src/server/http/codec/infer-request.js';
import { bytesOf, errorOf, framed } from './support.js';

/** A request body: JSON header, then binary parts; returns the body and the header length. */
function body(header: unknown, ...binary: Buffer[]): { body: Buffer; headerLength: number } {
  const json = Buffer.from(JSON.stringify(header));
  return { body: Buffer.concat([json, ...binary]), headerLength: json.byteLength };
}

const jsonOnly = (header: unknown) => Buffer.from(JSON.stringify(header));
const decodeJson = (header: unknown) => decodeInferRequest('m', undefined, jsonOnly(header));
const messageOf = (header: unknown) => errorOf(() => decodeJson(header)).message;
const fp32 = (name: string, shape: number[], data: unknown) => ({ name, datatype: 'FP32', shape, data });

describe('Inference-Header-Content-Length', () => {
  it('is absent, a length, or 0 for a raw binary request', () => {
    expect(parseHeaderLength(undefined, 10)).toBeUndefined();
    expect(parseHeaderLength('7', 10)).toBe(7);
    expect(parseHeaderLength(' 10 ', 10)).toBe(10);
    expect(parseHeaderLength('0', 10)).toBe(0);
    expect(parseHeaderLength(['4', '5'], 10)).toBe(4);
  });

  it('must be a non-negative integer', () => {
    for (const bad of ['-1', 'abc', '1.5', '']) {
      expect(errorOf(() => parseHeaderLength(bad, 10)).message).toBe(`Inference-Header-Content-Length must be a non-negative integer, got '${bad}'`);
    }
  });

  it('may not point past the body', () => {
    const error = errorOf(() => parseHeaderLength('11', 10));
    expect(error.code).toBe('INVALID_ARG');
    expect(error.message).toBe('Inference-Header-Content-Length 11 is larger than the request body (10 bytes)');
  });
});

describe('JSON inference requests', () => {
  it('maps model, version, id, parameters, inputs and requested outputs', () => {
    const header = {
      id: 'req-7',
      parameters: { priority: 2, timeout: 1000, binary_data_output: true, custom: 'x' },
      inputs: [fp32('in', [1, 2], [[1, 2]])],
      outputs: [{ name: 'out', parameters: { binary_data: false, classification: 3 } }, { name: 'other' }],
    };
    const request = decodeInferRequest('m', '2', jsonOnly(header));
    expect(request).toEqual({
      model: 'm',
      version: '2',
      id: 'req-7',
      parameters: { priority: 2, timeout: 1000, binary_data_output: true, custom: 'x' },
      inputs: [{ name: 'in', datatype: 'FP32', shape: [1, 2], data: new Float32Array([1, 2]) }],
      outputs: [
        { name: 'out', parameters: { binary_data: false, classification: 3 } },
        { name: 'other', parameters: {} },
      ],
    });
  });

  it('leaves version, id and outputs out when the request has none', () => {
    expect(decodeJson({ inputs: [] })).toEqual({ model: 'm', parameters: {}, inputs: [] });
  });

  it('keeps INT64 data exact past 2^53', () => {
    const text = '{"inputs":[{"name":"ids","datatype":"INT64","shape":[2],"data":[9223372036854775807,-9007199254740993]}]}';
    const request = decodeInferRequest('m', undefined, Buffer.from(text));
    expect(request.inputs[0]!.data).toEqual(new BigInt64Array([9223372036854775807n, -9007199254740993n]));
  });

  it('rejects malformed JSON and a non-object body', () => {
    expect(errorOf(() => decodeInferRequest('m', undefined, Buffer.from('{"inputs":'))).message).toMatch(/^failed to parse the request JSON: /);
    expect(messageOf([1])).toBe('the inference request must be a JSON object');
    expect(errorOf(() => decodeInferRequest('m', undefined, Buffer.alloc(0))).message).toMatch(/^failed to parse the request JSON: /);
  });

  it('requires an inputs array', () => {
    expect(messageOf({})).toBe("the inference request needs an 'inputs' array");
    expect(messageOf({ inputs: {} })).toBe("the inference request needs an 'inputs' array");
  });

  it("validates each input's name, datatype and shape", () => {
    expect(messageOf({ inputs: [3] })).toBe('input 0 must be a JSON object');
    expect(messageOf({ inputs: [{ datatype: 'FP32', shape: [1], data: [1] }] })).toBe("input 0 needs a non-empty 'name'");
    expect(messageOf({ inputs: [{ name: 'a', datatype: 'FLOAT', shape: [1], data: [1] }] })).toBe('input \'a\': unknown datatype "FLOAT"');
    expect(messageOf({ inputs: [{ name: 'a', shape: [1], data: [1] }] })).toBe("input 'a': unknown datatype undefined");
    expect(messageOf({ inputs: [fp32('a', [-1], [1])] })).toBe("input 'a': 'shape' must be an array of non-negative integers");
    expect(messageOf({ inputs: [fp32('a', [1.5], [1])] })).toBe("input 'a': 'shape' must be an array of non-negative integers");
    expect(messageOf({ inputs: [{ name: 'a', datatype: 'FP32', data: [1] }] })).toBe("input 'a': 'shape' must be an array of non-negative integers");
  });

  it('requires data or binary_data_size, not both', () => {
    expect(messageOf({ inputs: [{ name: 'a', datatype: 'FP32', shape: [1] }] })).toBe("input 'a' has neither 'data' nor a binary_data_size parameter");
    const both = { name: 'a', datatype: 'FP32', shape: [1], data: [1], parameters: { binary_data_size: 4 } };
    const { body: b, headerLength } = body({ inputs: [both] }, Buffer.alloc(4));
    expect(errorOf(() => decodeInferRequest('m', undefined, b, headerLength)).message).toBe("input 'a' has both 'data' and a binary_data_size parameter");
  });

  it('rejects duplicate inputs and outputs', () => {
    expect(messageOf({ inputs: [fp32('a', [1], [1]), fp32('a', [1], [2])] })).toBe("input 'a' appears more than once in the request");
    expect(messageOf({ inputs: [], outputs: [{ name: 'o' }, { name: 'o' }] })).toBe("output 'o' appears more than once in the request");
  });

  it('validates id, reserved request parameters and requested outputs', () => {
    expect(messageOf({ id: 5, inputs: [] })).toBe("the inference request field 'id' must be a string");
    expect(messageOf({ parameters: [], inputs: [] })).toBe("the inference request 'parameters' must be a JSON object");
    expect(messageOf({ parameters: { priority: -1 }, inputs: [] })).toBe("request parameter 'priority' must be a non-negative integer");
    expect(messageOf({ parameters: { timeout: 'soon' }, inputs: [] })).toBe("request parameter 'timeout' must be a non-negative integer");
    expect(messageOf({ parameters: { binary_data_output: 1 }, inputs: [] })).toBe("request parameter 'binary_data_output' must be a boolean");
    expect(messageOf({ parameters: { sequence_start: 'yes' }, inputs: [] })).toBe("request parameter 'sequence_start' must be a boolean");
    expect(messageOf({ inputs: [], outputs: {} })).toBe("the inference request field 'outputs' must be an array");
    expect(messageOf({ inputs: [], outputs: [{}] })).toBe("requested output 0 needs a non-empty 'name'");
    expect(messageOf({ inputs: [], outputs: [{ name: 'o', parameters: { binary_data: 'yes' } }] })).toBe("output 'o': binary_data must be a boolean");
    expect(messageOf({ inputs: [], outputs: [{ name: 'o', parameters: { classification: 0 } }] })).toBe("output 'o': classification must be a positive integer");
    expect(messageOf({ inputs: [], outputs: [{ name: 'o', parameters: { classification: 2.5 } }] })).toBe("output 'o': classification must be a positive integer");
  });

  it('refuses shared memory as unsupported', () => {
    const input = { ...fp32('a', [1], [1]), parameters: { shared_memory_region: 'r', shared_memory_byte_size: 4 } };
    const error = errorOf(() => decodeJson({ inputs: [input] }));
    expect(error.code).toBe('UNSUPPORTED');
    expect(error.message).toBe("input 'a': shared memory is not supported");
    const output = { name: 'o', parameters: { shared_memory_region: 'r' } };
    expect(errorOf(() => decodeJson({ inputs: [], outputs: [output] })).message).toBe("output 'o': shared memory is not supported");
  });
});

describe('binary tensor data in inference requests', () => {
  const binaryInput = (name: string, datatype: string, shape: number[], size: number) => ({ name, datatype, shape, parameters: { binary_data_size: size } });

  it('reads binary inputs in order after the JSON, mixed with JSON inputs', () => {
    const a = new Float32Array([1, 2, 3, 4]);
    const header = {
      inputs: [binaryInput('a', 'FP32', [2, 2], 16), { name: 'j', datatype: 'INT32', shape: [1], data: [9] }, binaryInput('s', 'BYTES', [2], 13), binaryInput('b', 'BOOL', [3], 3)],
    };
    const { body: b, headerLength } = body(header, bytesOf(a), framed('hello', ''), Buffer.from([1, 0, 1]));
    const request = decodeInferRequest('m', undefined, b, headerLength);
    expect(request.inputs.map((t) => [t.name, t.datatype, t.shape])).toEqual([
      ['a', 'FP32', [2, 2]],
      ['j', 'INT32', [1]],
      ['s', 'BYTES', [2]],
      ['b', 'BOOL', [3]],
    ]);
    expect(request.inputs[0]!.data).toEqual(a);
    expect(request.inputs[1]!.data).toEqual(new Int32Array([9]));
    expect((request.inputs[2]!.data as Uint8Array[]).map((e) => Buffer.from(e).toString())).toEqual(['hello', '']);
    expect(request.inputs[3]!.data).toEqual(new Uint8Array([1, 0, 1]));
  });

  it('carries FP16 and BF16 as binary bit patterns', () => {
    const half = new Uint16Array([0x3c00, 0xc000]);
    const { body: b, headerLength } = body({ inputs: [binaryInput('h', 'FP16', [2], 4), binaryInput('g', 'BF16', [2], 4)] }, bytesOf(half), bytesOf(half));
    const request = decodeInferRequest('m', undefined, b, headerLength);
    expect(request.inputs.map((t) => t.data)).toEqual([half, half]);
  });

  it('rejects a payload shorter than the sizes declared', () => {
    const { body: b, headerLength } = body({ inputs: [binaryInput('a', 'FP32', [2], 8), binaryInput('b', 'FP32', [2], 8)] }, Buffer.alloc(12));
    expect(errorOf(() => decodeInferRequest('m', undefined, b, headerLength)).message).toBe("input 'b': binary_data_size 8 exceeds the 4 bytes of binary data left");
  });

  it('rejects binary inputs when the header length is missing (no binary data)', () => {
    const json = jsonOnly({ inputs: [binaryInput('a', 'FP32', [1], 4)] });
    expect(errorOf(() => decodeInferRequest('m', undefined, json)).message).toBe("input 'a': binary_data_size 4 exceeds the 0 bytes of binary data left");
  });

  it('rejects binary data no input claims', () => {
    const { body: b, headerLength } = body({ inputs: [binaryInput('a', 'FP32', [1], 4)] }, Buffer.alloc(6));
    expect(errorOf(() => decodeInferRequest('m', undefined, b, headerLength)).message).toBe('the request has 2 bytes of binary data that no input claims');
    const { body: b2, headerLength: h2 } = body({ inputs: [fp32('a', [1], [1])] }, Buffer.alloc(3));
    expect(errorOf(() => decodeInferRequest('m', undefined, b2, h2)).message).toBe('the request has 3 bytes of binary data that no input claims');
  });

  it('rejects a binary_data_size that disagrees with the shape', () => {
    const { body: b, headerLength } = body({ inputs: [binaryInput('a', 'FP32', [3], 8)] }, Buffer.alloc(8));
    expect(errorOf(() => decodeInferRequest('m', undefined, b, headerLength)).message).toBe("input 'a': binary_data_size 8 does not match shape [3] of FP32 (12 bytes)");
  });

  it('rejects a malformed binary_data_size', () => {
    for (const size of [-4, 1.5, '4', true]) {
      const header = { inputs: [{ name: 'a', datatype: 'FP32', shape: [1], parameters: { binary_data_size: size } }] };
      const { body: b, headerLength } = body(header, Buffer.alloc(4));
      expect(errorOf(() => decodeInferRequest('m', undefined, b, headerLength)).message).toBe("input 'a': binary_data_size must be a non-negative integer");
    }
  });

  it('splits at the header length, not at the end of the JSON text', () => {
    const json = Buffer.from(JSON.stringify({ inputs: [binaryInput('a', 'UINT8', [2], 2)] }));
    const request = decodeInferRequest('m', undefined, Buffer.concat([json, Buffer.from([7, 8])]), json.byteLength);
    expect(request.inputs[0]!.data).toEqual(new Uint8Array([7, 8]));
    expect(errorOf(() => decodeInferRequest('m', undefined, Buffer.concat([json, Buffer.from([7, 8])]), json.byteLength - 1)).message).toMatch(/^failed to parse the request JSON: /);
  });
});
