import { describe, expect, it } from 'vitest';
import type { InferResponse } from '../../../../src/contracts/infer.js';
import { ConveyorError } from '../../../../src/errors.js';
import { inferRequestFromWire, inferResponseToWire, parametersFromWire, parametersToWire } from '../../../../src/server/grpc/infer-codec.js';
import { loadServiceDefinitions } from '../../../../src/server/kit/grpc/protos.js';
import { encodeBytesElements } from '../../../../src/server/grpc/tensor-codec.js';
import type { WireInferRequest, WireInputTensor } from '../../../../src/server/grpc/wire-types.js';

const text = (s: string) => new TextEncoder().encode(s);
const f32Bytes = (...values: number[]) => new Uint8Array(Float32Array.from(values).buffer);

function input(name: string, datatype: string, shape: number[], contents: WireInputTensor['contents'] = null): WireInputTensor {
  return { name, datatype, shape: shape.map(String), parameters: {}, contents };
}

function request(overrides: Partial<WireInferRequest>): WireInferRequest {
  return { model_name: 'm', model_version: '', id: '', parameters: {}, inputs: [], outputs: [], raw_input_contents: [], ...overrides };
}

function errorOf(fn: () => unknown): ConveyorError {
  try {
    fn();
  } catch (error) {
    if (error instanceof ConveyorError) return error;
    throw error;
  }
  throw new Error('expected a ConveyorError');
}

describe('ModelInferRequest → InferRequest', () => {
  it('maps names, version, id, parameters and requested outputs', () => {
    const r = inferRequestFromWire(
      request({
        model_version: '2',
        id: 'req-1',
        parameters: { priority: { int64_param: '1', parameter_choice: 'int64_param' }, tag: { string_param: 'a', parameter_choice: 'string_param' } },
        outputs: [{ name: 'probs', parameters: { classification: { int64_param: '3', parameter_choice: 'int64_param' } } }],
      }),
    );
    expect(r).toEqual({ model: 'm', version: '2', id: 'req-1', parameters: { priority: 1, tag: 'a' }, inputs: [], outputs: [{ name: 'probs', parameters: { classification: 3 } }] });
  });

  it('leaves version, id and outputs out when the wire leaves them empty', () => {
    const r = inferRequestFromWire(request({}));
    expect(r).toEqual({ model: 'm', parameters: {}, inputs: [] });
  });

  it('reads inputs from typed contents', () => {
    const r = inferRequestFromWire(
      request({
        inputs: [input('a', 'FP32', [1, 2], { fp32_contents: [1, 2] }), input('b', 'BYTES', [1], { bytes_contents: [text('hi')] })],
      }),
    );
    expect(r.inputs.map((t) => [t.name, t.datatype, t.shape])).toEqual([
      ['a', 'FP32', [1, 2]],
      ['b', 'BYTES', [1]],
    ]);
    expect([...(r.inputs[0]!.data as Float32Array)]).toEqual([1, 2]);
    expect((r.inputs[1]!.data as Uint8Array[]).map((e) => new TextDecoder().decode(e))).toEqual(['hi']);
  });

  it('reads inputs from raw_input_contents, one entry per input in order', () => {
    const r = inferRequestFromWire(
      request({
        inputs: [input('a', 'FP32', [2]), input('b', 'BYTES', [2]), input('c', 'FP16', [1])],
        raw_input_contents: [f32Bytes(3, 4), encodeBytesElements([text('x'), text('yz')]), Uint8Array.from([0x00, 0x3c])],
      }),
    );
    expect([...(r.inputs[0]!.data as Float32Array)]).toEqual([3, 4]);
    expect((r.inputs[1]!.data as Uint8Array[]).map((e) => e.length)).toEqual([1, 2]);
    expect([...(r.inputs[2]!.data as Uint16Array)]).toEqual([0x3c00]);
  });

  it('rejects raw_input_contents whose count differs from the inputs', () => {
    const e = errorOf(() => inferRequestFromWire(request({ inputs: [input('a', 'FP32', [1]), input('b', 'FP32', [1])], raw_input_contents: [f32Bytes(1)] })));
    expect(e.code).toBe('INVALID_ARG');
    expect(e.message).toMatch(/raw_input_contents has 1 entries but the request has 2 inputs/);
  });

  it('rejects mixing raw_input_contents with contents', () => {
    const e = errorOf(() =>
      inferRequestFromWire(
        request({
          inputs: [input('a', 'FP32', [1], { fp32_contents: [1] }), input('b', 'FP32', [1])],
          raw_input_contents: [f32Bytes(1), f32Bytes(2)],
        }),
      ),
    );
    expect(e.code).toBe('INVALID_ARG');
    expect(e.message).toMatch(/input 'a' sets contents while the request uses raw_input_contents/);
  });

  it('rejects malformed raw lengths', () => {
    const e = errorOf(() => inferRequestFromWire(request({ inputs: [input('a', 'FP32', [2])], raw_input_contents: [new Uint8Array(7)] })));
    expect(e.message).toMatch(/input 'a': expected 8 bytes of raw FP32 data/);
  });

  it('rejects FP16 sent as contents', () => {
    const e = errorOf(() => inferRequestFromWire(request({ inputs: [input('h', 'FP16', [1], { uint_contents: [15360] })] })));
    expect(e.message).toMatch(/FP16 data can only be sent in raw_input_contents/);
  });

  it('rejects an input with no data, an unknown datatype and shared memory', () => {
    expect(errorOf(() => inferRequestFromWire(request({ inputs: [input('a', 'FP32', [2])] }))).message).toMatch(/input 'a': no data/);
    expect(errorOf(() => inferRequestFromWire(request({ inputs: [input('a', 'FLOAT', [1], { fp32_contents: [1] })] }))).message).toMatch(/unknown datatype 'FLOAT'/);
    const shm = input('a', 'FP32', [1]);
    shm.parameters = { shared_memory_region: { string_param: 'r', parameter_choice: 'string_param' } };
    expect(errorOf(() => inferRequestFromWire(request({ inputs: [shm] }))).code).toBe('UNSUPPORTED');
  });

  it('accepts an empty tensor without data', () => {
    const r = inferRequestFromWire(request({ inputs: [input('a', 'FP16', [0, 4])] }));
    expect(r.inputs[0]!.data).toHaveLength(0);
  });
});

describe('InferResponse → ModelInferResponse', () => {
  const response: InferResponse = {
    model: 'm',
    version: '1',
    id: 'r',
    outputs: [
      { name: 'y', datatype: 'INT32', shape: [2], data: Int32Array.from([1, -1]) },
      { name: 's', datatype: 'BYTES', shape: [1], data: [text('ok')] },
    ],
  };

  it('always answers with raw_output_contents and tensor metadata without contents', () => {
    const wire = inferResponseToWire(response);
    expect(wire.outputs).toEqual([
      { name: 'y', datatype: 'INT32', shape: [2], parameters: {} },
      { name: 's', datatype: 'BYTES', shape: [1], parameters: {} },
    ]);
    expect(wire.raw_output_contents.map((b) => [...b])).toEqual([
      [1, 0, 0, 0, 255, 255, 255, 255],
      [2, 0, 0, 0, 0x6f, 0x6b],
    ]);
    expect(wire).toMatchObject({ model_name: 'm', model_version: '1', id: 'r', parameters: {} });
  });

  it('adds front-end parameters such as triton_final_response', () => {
    expect(inferResponseToWire(response, { triton_final_response: true }).parameters).toEqual({ triton_final_response: { bool_param: true } });
  });
});

describe('InferParameter', () => {
  it('maps every member both ways', () => {
    const wire = parametersToWire({ b: true, s: 'x', i: 7, d: 0.5, big: 1n << 62n, huge: 1n << 63n });
    expect(wire).toEqual({
      b: { bool_param: true },
      s: { string_param: 'x' },
      i: { int64_param: 7 },
      d: { double_param: 0.5 },
      big: { int64_param: '4611686018427387904' },
      huge: { uint64_param: '9223372036854775808' },
    });
    const decoded = parametersFromWire({
      b: { bool_param: false, parameter_choice: 'bool_param' },
      d: { double_param: 1.25, parameter_choice: 'double_param' },
      big: { int64_param: '4611686018427387904', parameter_choice: 'int64_param' },
      u: { uint64_param: '3', parameter_choice: 'uint64_param' },
      none: {},
    });
    expect(decoded).toEqual({ b: false, d: 1.25, big: 1n << 62n, u: 3 });
  });
});

describe('through the proto (proto-loader serializers)', () => {
  const rpc = loadServiceDefinitions().inference['ModelInfer']!;

  it('decodes a tritonclient-style raw request and encodes the response', () => {
    const bytes = rpc.requestSerialize({
      model_name: 'm',
      id: '9',
      inputs: [{ name: 'a', datatype: 'INT64', shape: [1, 2] }],
      raw_input_contents: [new Uint8Array(BigInt64Array.from([9007199254740993n, -1n]).buffer)],
      parameters: { sequence_id: { uint64_param: '18446744073709551615' } },
    });
    const decoded = rpc.requestDeserialize(bytes) as WireInferRequest;
    const r = inferRequestFromWire(decoded);
    expect(r.inputs[0]!.shape).toEqual([1, 2]);
    expect([...(r.inputs[0]!.data as BigInt64Array)]).toEqual([9007199254740993n, -1n]);
    expect(r.parameters).toEqual({ sequence_id: 18446744073709551615n });

    const out = rpc.responseDeserialize(rpc.responseSerialize(inferResponseToWire({ model: 'm', version: '1', outputs: [r.inputs[0]!] }))) as Record<string, unknown>;
    expect(out['outputs']).toMatchObject([{ name: 'a', datatype: 'INT64', shape: ['1', '2'] }]);
    expect([...(out['raw_output_contents'] as Uint8Array[])[0]!]).toEqual([...new Uint8Array(BigInt64Array.from([9007199254740993n, -1n]).buffer)]);
  });
});
