// Fuzzing the KServe v2 HTTP request codecs: inference bodies (JSON header plus binary tensor
// data), the header-length header, raw binary requests, the JSON and binary tensor decoders on
// their own, and the generate extension's request reader. Requests are generated near-valid
// (real datatypes, shapes, data and binary_data_size) with fields swapped for weird values,
// shapes whose element or byte counts overflow, and nesting beyond any stack.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { DataType, Tensor } from '../../../src/contracts/tensors.js';
import { buildTritonLlmRequest, tritonInputsFromTensors } from '../../../src/triton-llm/request.js';
import { decodeBinaryData, serializeBytesElements } from '../../../src/server/http/codec/binary-tensor.js';
import { decodeInferRequest, parseHeaderLength } from '../../../src/server/http/codec/infer-request.js';
import { parseJson } from '../../../src/server/http/codec/json-body.js';
import { decodeJsonData } from '../../../src/server/http/codec/json-tensor.js';
import { decodeRawInferRequest } from '../../../src/server/http/codec/raw-request.js';
import { input, modelConfig } from '../../support/model-config.js';
import {
  sometimes,
  BYTES_PER_ELEMENT,
  DATATYPES,
  expectConsistentTensor,
  extremeNumber,
  maybe,
  mutatedText,
  nested,
  objectOf,
  outcome,
  ownRecord,
  PROTOTYPE_KEYS,
  runs,
  trickyString,
  weirdValue,
} from './support.js';

const dim = fc.oneof({ weight: 6, arbitrary: fc.integer({ min: 0, max: 4 }) }, { weight: 1, arbitrary: fc.constantFrom(-1, 2 ** 31, 2 ** 32 + 1, 2 ** 53 - 1, 2 ** 53, 1.5) });
const shapeArb = fc.array(dim, { maxLength: 4 });

/** An element value for a datatype: usually in range, sometimes at or past its edges. */
function elementOf(datatype: DataType): fc.Arbitrary<unknown> {
  switch (datatype) {
    case 'BOOL':
      return maybe(fc.boolean(), 8);
    case 'BYTES':
      return maybe(fc.string({ maxLength: 6 }), 8);
    case 'FP32':
    case 'FP64':
      return maybe(fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.constantFrom(3.5e38, -3.5e38, 1e308)), 8);
    case 'INT64':
    case 'UINT64':
      return maybe(fc.oneof(fc.integer({ min: -5, max: 5 }), fc.constantFrom(2n ** 63n, 2n ** 63n - 1n, 2n ** 64n, -(2n ** 63n) - 1n)), 8);
    default:
      return maybe(fc.oneof(fc.integer({ min: -200, max: 300 }), fc.constantFrom(65535, 65536, 2 ** 31, -(2 ** 31) - 1, 2 ** 32)), 8);
  }
}

/** `count` elements, flat or nested by the shape's leading dimension, sometimes the wrong number. */
function dataOf(datatype: DataType, shape: readonly number[]): fc.Arbitrary<unknown> {
  const count = Math.min(plannedCount(shape), 24);
  const flat = fc.integer({ min: Math.max(0, count - 1), max: count + 1 }).chain((n) => fc.array(elementOf(datatype), { minLength: n, maxLength: n }));
  return fc.oneof(
    { weight: 6, arbitrary: flat },
    { weight: 2, arbitrary: flat.map((values) => (shape.length > 1 && shape[0]! > 0 && values.length % shape[0]! === 0 ? chunk(values, values.length / shape[0]!) : values)) },
    { weight: 1, arbitrary: flat.map((values) => values.map((v) => nested(3, v))) },
    { weight: 1, arbitrary: weirdValue },
  );
}

/** Elements a generated shape asks for, capped: what the generators size their data by. */
const plannedCount = (shape: readonly number[]): number =>
  Math.min(
    64,
    shape.reduce((n, d) => n * Math.max(0, Math.floor(d)), 1),
  );

const chunk = <T>(values: T[], size: number): T[][] => (size <= 0 ? [values] : Array.from({ length: Math.ceil(values.length / size) }, (_, i) => values.slice(i * size, (i + 1) * size)));

interface InputPlan {
  readonly entry: Record<string, unknown>;
  /** Binary bytes this input claims (0 for JSON data). */
  readonly binary: Uint8Array;
}

/** One input: a JSON `data` input or a binary one whose bytes follow the header. */
const inputPlan: fc.Arbitrary<InputPlan> = fc
  .tuple(fc.constantFrom(...DATATYPES), shapeArb, fc.constantFrom('a', 'b', 'c', '', ...PROTOTYPE_KEYS), fc.boolean())
  .chain(([datatype, shape, name, binary]) => {
    const size = datatype === 'BYTES' ? 0 : plannedCount(shape) * (BYTES_PER_ELEMENT[datatype] ?? 1);
    const bytes = fc.oneof(
      { weight: 4, arbitrary: fc.uint8Array({ minLength: size, maxLength: size }) },
      { weight: 2, arbitrary: fc.array(fc.uint8Array({ maxLength: 5 }), { maxLength: 4 }).map((elements) => new Uint8Array(serializeBytesElements(elements))) },
      { weight: 1, arbitrary: fc.uint8Array({ maxLength: 16 }) },
    );
    if (binary) {
      return fc.tuple(bytes, maybe(fc.constant(datatype), 10), maybe(fc.constant(shape), 10), sometimes(weirdValue, 6), fc.boolean()).map(
        ([data, dt, sh, badSize, bigintSize]): InputPlan => ({
          entry: ownRecord([
            ['name', name],
            ['datatype', dt],
            ['shape', sh],
            ['parameters', { binary_data_size: badSize ?? (bigintSize ? BigInt(data.byteLength) : data.byteLength) }],
          ]),
          binary: data,
        }),
      );
    }
    return fc
      .tuple(
        dataOf(datatype, shape),
        objectOf({ name: maybe(fc.constant(name), 10), datatype: maybe(fc.constant(datatype), 10), shape: maybe(fc.constant(shape), 10), parameters: maybe(fc.constant({}), 3) }),
      )
      .map(
        ([data, entry]): InputPlan => ({
          entry: ownRecord([...Object.entries(entry), ['data', data]]),
          binary: new Uint8Array(0),
        }),
      );
  });

const outputsArb = maybe(
  fc.array(objectOf({ name: maybe(fc.constantFrom('y', 'z', ''), 6), parameters: maybe(objectOf({ binary_data: maybe(fc.boolean()), classification: maybe(fc.nat({ max: 3 })) }), 3) }), {
    maxLength: 3,
  }),
  3,
);
const requestParameters = maybe(objectOf({ priority: maybe(fc.nat({ max: 5 })), timeout: maybe(fc.nat()), binary_data_output: maybe(fc.boolean()), sequence_start: maybe(fc.boolean()) }), 3);

/** A whole request body and the header length a client would send with it. */
const requestBody = fc
  .tuple(fc.array(inputPlan, { maxLength: 3 }), outputsArb, requestParameters, maybe(fc.string({ maxLength: 4 }), 6), fc.uint8Array({ maxLength: 3 }), fc.boolean())
  .map(([plans, outputs, parameters, id, trailing, extraBytes]) => {
    const header = ownRecord([
      ['inputs', plans.map((p) => p.entry)],
      ['id', id],
      ['outputs', outputs],
      ['parameters', parameters],
    ]);
    const json = Buffer.from(jsonTextWithBigints(header));
    const binary = Buffer.concat([...plans.map((p) => p.binary), extraBytes ? trailing : new Uint8Array(0)]);
    return { body: Buffer.concat([json, binary]), headerLength: binary.byteLength > 0 ? json.byteLength : undefined };
  });

/** JSON text where bigints print as exact integer literals (as a client's 64-bit ids would). */
function jsonTextWithBigints(value: unknown): string {
  const marks: string[] = [];
  const text = JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? `\u0002${marks.push(v.toString()) - 1}\u0002` : v)) ?? 'null';
  return text.replace(/"\\u0002(\d+)\\u0002"/g, (_m, i: string) => marks[Number(i)]!);
}

describe('KServe HTTP codec fuzzing', () => {
  it('any inference body decodes to consistent tensors or a protocol error', () => {
    let decoded = 0;
    fc.assert(
      fc.property(requestBody, ({ body, headerLength }) => {
        const result = outcome(() => decodeInferRequest('m', undefined, body, headerLength));
        if (!result.ok) return;
        decoded++;
        result.value.inputs.forEach(expectConsistentTensor);
        expect(new Set(result.value.inputs.map((t) => t.name)).size).toBe(result.value.inputs.length);
      }),
      { numRuns: runs(1000) },
    );
    expect(decoded).toBeGreaterThan(0);
  });

  it('mangled bodies and header lengths never escape as a non-protocol error', () => {
    const text = fc.oneof(
      requestBody.map(({ body }) => body.toString('latin1')),
      fc.string({ maxLength: 40 }),
    );
    fc.assert(
      fc.property(mutatedText(text), fc.option(fc.oneof(fc.nat({ max: 200 }).map(String), trickyString), { nil: undefined }), (source, lengthHeader) => {
        const body = Buffer.from(source, 'latin1');
        const length = outcome(() => parseHeaderLength(lengthHeader, body.byteLength));
        const headerLength = length.ok ? length.value : undefined;
        if (headerLength === 0) return;
        const result = outcome(() => decodeInferRequest('m', '1', body, headerLength));
        if (result.ok) result.value.inputs.forEach(expectConsistentTensor);
      }),
      { numRuns: runs(1000) },
    );
  });

  it('JSON tensor data of any shape, datatype and depth decodes to its shape or is refused', () => {
    const args = fc
      .tuple(fc.constantFrom(...DATATYPES), shapeArb)
      .chain(([datatype, shape]) => fc.tuple(fc.constant(datatype), fc.constant(shape.map((d) => Math.min(2 ** 53 - 1, Math.max(0, Math.floor(d))))), dataOf(datatype, shape)));
    fc.assert(
      fc.property(args, ([datatype, shape, data]) => {
        const result = outcome(() => decodeJsonData('x', datatype, shape as number[], data));
        if (result.ok) expectConsistentTensor({ name: 'x', datatype, shape: shape as number[], data: result.value });
      }),
      { numRuns: runs(1000) },
    );
  });

  it('binary tensor data whose shape × datatype overflows any count is refused', () => {
    const huge = fc.array(fc.oneof(fc.constantFrom(0, 1, 2, 2 ** 31, 2 ** 32, 2 ** 53 - 1), fc.nat({ max: 9 })), { maxLength: 24 });
    fc.assert(
      fc.property(fc.constantFrom(...DATATYPES), huge, fc.uint8Array({ maxLength: 48 }), fc.nat({ max: 7 }), (datatype, shape, bytes, offset) => {
        // An odd offset inside a larger buffer, as a body slice has.
        const view = new Uint8Array(Buffer.concat([Buffer.alloc(offset), bytes]).buffer, offset, bytes.byteLength);
        const result = outcome(() => decodeBinaryData('x', datatype, shape, view));
        if (result.ok) expectConsistentTensor({ name: 'x', datatype, shape, data: result.value });
      }),
      { numRuns: runs(1000) },
    );
  });

  it('raw binary requests decode against any single-input config or are refused', () => {
    const config = fc.tuple(
      fc.constantFrom('TYPE_FP32', 'TYPE_INT64', 'TYPE_STRING', 'TYPE_BOOL', 'TYPE_FP16', 'TYPE_UINT8'),
      fc.array(fc.constantFrom(-1, 0, 1, 2, 3, 2 ** 31), { maxLength: 3 }),
      fc.nat({ max: 2 }),
    );
    fc.assert(
      fc.property(config, fc.uint8Array({ maxLength: 32 }), ([dataType, dims, maxBatch], bytes) => {
        const model = modelConfig({ input: [input('x', dataType, dims)], max_batch_size: maxBatch });
        const result = outcome(() => decodeRawInferRequest('m', undefined, model, Buffer.from(bytes)));
        if (result.ok) result.value.inputs.forEach(expectConsistentTensor);
      }),
      { numRuns: runs(500) },
    );
  });

  it('generate-extension requests read to a checked Triton LLM request or a protocol error', () => {
    const inputNames = fc.constantFrom('text_input', 'stream', 'max_tokens', 'exclude_input_in_output', 'sampling_parameters', 'return_finish_reason', ...PROTOTYPE_KEYS);
    const values = fc.oneof(fc.string({ maxLength: 6 }), fc.boolean(), extremeNumber, fc.constantFrom('true', '{"temperature": 0.5}', '{"toString": 1}', '[1,2]', '{'), weirdValue);
    const entries = fc.array(fc.tuple(inputNames, values), { maxLength: 5 }).map((e) => ownRecord(e));
    const parameterNames = fc.constantFrom('temperature', 'top_k', 'stop', 'stream', 'logit_bias', 'seed', 'triton_x', 'priority', 'bogus', ...PROTOTYPE_KEYS);
    const parameters = fc.array(fc.tuple(parameterNames, values), { maxLength: 5 }).map((e) => ownRecord(e));
    fc.assert(
      fc.property(entries, parameters, (inputs, params) => {
        const result = outcome(() => buildTritonLlmRequest({ model: 'm' }, inputs, params));
        if (!result.ok) return;
        expect(typeof result.value.prompt).toBe('string');
        for (const key of Object.keys(result.value.sampling)) expect(PROTOTYPE_KEYS as readonly string[]).not.toContain(key);
      }),
      { numRuns: runs(1000) },
    );
  });
});

describe('KServe HTTP codec fuzzing regressions', () => {
  it('JSON data nested 100,000 deep is a shape error, not "Maximum call stack size exceeded"', () => {
    const deep = parseJson(`{"data":${'['.repeat(100_000)}1${']'.repeat(100_000)}}`) as { data: unknown };
    expect(decodeJsonData('x', 'FP32', [1], deep.data)).toEqual(new Float32Array([1]));
    expect(() => decodeJsonData('x', 'FP32', [2], deep.data)).toThrow("input 'x': shape [2] needs 2 elements, 'data' has 1");
  });

  it('a datatype given as a 64-bit integer is named in the error (was a TypeError serializing the bigint)', () => {
    const body = Buffer.from('{"inputs":[{"name":"a","datatype":9007199254740993,"shape":[1],"data":[1]}]}');
    expect(() => decodeInferRequest('m', undefined, body)).toThrow("input 'a': unknown datatype 9007199254740993");
    const nestedBody = Buffer.from('{"inputs":[{"name":"a","datatype":{"x":[-9007199254740993]},"shape":[1],"data":[1]}]}');
    expect(() => decodeInferRequest('m', undefined, nestedBody)).toThrow(`input 'a': unknown datatype {"x":["-9007199254740993"]}`);
  });

  it('inputs and parameters named after Object.prototype members are refused, not silently taken', () => {
    const tensor = (name: string): Tensor => ({ name, datatype: 'BOOL', shape: [1], data: new Uint8Array([1]) });
    expect(() => tritonInputsFromTensors([tensor('constructor')])).toThrow("unexpected inference input 'constructor'");
    expect(() => buildTritonLlmRequest({ model: 'm' }, { text_input: 'hi' }, { toString: 1 })).toThrow('unsupported parameter: toString');
    expect(() => buildTritonLlmRequest({ model: 'm' }, { text_input: 'hi' }, { constructor: 'x' })).toThrow('unsupported parameter: constructor');
  });
});
