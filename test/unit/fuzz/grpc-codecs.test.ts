// Fuzzing the gRPC front end's decoders two ways. First, decoded-message-shaped objects (what
// @grpc/proto-loader hands a handler: snake_case, longs as decimal strings, oneof names, defaults
// filled) with values at the edges, fed straight to the codecs. Second, arbitrary and mutated
// bytes through the real method deserializers built from protos/ (the exact code grpc-js runs),
// then the codecs. A deserializer may refuse bytes (grpc-js answers that itself); whatever it
// returns must become a request or a client-error ConveyorError. GenerationService requests are
// carried on through the real input processor of the tiny Qwen3 model.

import { join } from 'node:path';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { InputProcessor } from '../../../src/engine-client/input-processor.js';
import { generateCallFromWire, type WireGenerateRequest, type WireSamplingParameters } from '../../../src/server/grpc-generation/generation-codec.js';
import { inferRequestFromWire } from '../../../src/server/grpc/infer-codec.js';
import { loadOverrideFromWire, unloadOptionsFromWire } from '../../../src/server/grpc/repository-codec.js';
import { loadServiceDefinitions } from '../../../src/server/kit/grpc/protos.js';
import type { WireInferParameter, WireInferRequest, WireInputTensor, WireRepositoryParameter, WireTensorContents } from '../../../src/server/grpc/wire-types.js';
import { DATATYPES, expectConsistentTensor, outcome, ownRecord, PROTOTYPE_KEYS, runs } from './support.js';

const definitions = loadServiceDefinitions();
const method = (service: 'inference' | 'generation', name: string) => definitions[service][name]!;
const modelInfer = method('inference', 'ModelInfer');
const repositoryLoad = method('inference', 'RepositoryModelLoad');
const repositoryUnload = method('inference', 'RepositoryModelUnload');
const generate = method('generation', 'Generate');

let qwen3: InputProcessor;
beforeAll(async () => {
  qwen3 = await InputProcessor.load(join(process.cwd(), 'models/repository/qwen3-tiny/1'));
});

const keyName = fc.oneof(
  fc.constantFrom('a', 'shared_memory_region', 'binary_data', 'classification', 'priority', 'config', 'file:1/model.onnx', 'file:', 'unload_dependents', ...PROTOTYPE_KEYS),
  fc.string({ maxLength: 6 }),
);
const longText = fc.oneof(fc.integer({ min: -3, max: 6 }).map(String), fc.constantFrom('9007199254740993', '9223372036854775807', '-9223372036854775808', '18446744073709551615', '4294967296'));

const inferParameter: fc.Arbitrary<WireInferParameter> = fc.oneof(
  fc.boolean().map((v) => ({ bool_param: v, parameter_choice: 'bool_param' as const })),
  longText.map((v) => ({ int64_param: v, parameter_choice: 'int64_param' as const })),
  longText.map((v) => ({ uint64_param: v, parameter_choice: 'uint64_param' as const })),
  fc.string({ maxLength: 6 }).map((v) => ({ string_param: v, parameter_choice: 'string_param' as const })),
  fc.double().map((v) => ({ double_param: v, parameter_choice: 'double_param' as const })),
  fc.constant({}),
);
const parameterMap = <T>(value: fc.Arbitrary<T>) => fc.array(fc.tuple(keyName, value), { maxLength: 3 }).map((e) => ownRecord(e) as Record<string, T>);

const int = fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 });
const contents: fc.Arbitrary<Partial<WireTensorContents>> = fc
  .record(
    {
      bool_contents: fc.array(fc.boolean(), { maxLength: 4 }),
      int_contents: fc.array(fc.oneof(fc.integer({ min: -200, max: 300 }), fc.constantFrom(65535, 65536, -32769), int), { maxLength: 4 }),
      int64_contents: fc.array(longText, { maxLength: 4 }),
      uint_contents: fc.array(fc.oneof(fc.nat({ max: 300 }), fc.constant(2 ** 32 - 1)), { maxLength: 4 }),
      uint64_contents: fc.array(
        longText.filter((t) => !t.startsWith('-')),
        { maxLength: 4 },
      ),
      fp32_contents: fc.array(fc.float(), { maxLength: 4 }),
      fp64_contents: fc.array(fc.double(), { maxLength: 4 }),
      bytes_contents: fc.array(fc.uint8Array({ maxLength: 4 }), { maxLength: 4 }),
    },
    { requiredKeys: [] },
  )
  .map((c) => ({ bool_contents: [], int_contents: [], int64_contents: [], uint_contents: [], uint64_contents: [], fp32_contents: [], fp64_contents: [], bytes_contents: [], ...c }));

const inputTensor: fc.Arbitrary<WireInputTensor> = fc.record({
  name: fc.constantFrom('a', 'b', '', 'constructor'),
  datatype: fc.oneof({ weight: 8, arbitrary: fc.constantFrom(...DATATYPES) }, { weight: 1, arbitrary: fc.constantFrom('FOO', 'bytes', '', 'constructor', 'toString') }),
  shape: fc.array(fc.oneof({ weight: 6, arbitrary: fc.integer({ min: 0, max: 4 }).map(String) }, { weight: 1, arbitrary: longText }), { maxLength: 4 }),
  parameters: parameterMap(inferParameter),
  contents: fc.option(contents, { nil: null }),
});

/** A raw entry sized for the tensor most of the time, so raw decoding gets past its length check. */
const rawFor = (input: WireInputTensor): fc.Arbitrary<Uint8Array> => {
  const count = input.shape.reduce<number>((n, d) => n * Math.max(0, Math.min(Number(d), 8)), 1);
  const size = Math.min(64, count * 4);
  return fc.oneof(fc.uint8Array({ minLength: size, maxLength: size }), fc.uint8Array({ maxLength: 24 }));
};

const inferRequest: fc.Arbitrary<WireInferRequest> = fc
  .tuple(
    fc.array(inputTensor, { maxLength: 3 }),
    fc.boolean(),
    fc.array(fc.record({ name: fc.constantFrom('y', ''), parameters: parameterMap(inferParameter) }), { maxLength: 2 }),
    parameterMap(inferParameter),
  )
  .chain(([inputs, raw, outputs, parameters]) =>
    (raw ? fc.tuple(...inputs.map(rawFor)) : fc.constant([] as Uint8Array[])).map(
      (rawContents): WireInferRequest => ({
        model_name: 'm',
        model_version: '',
        id: 'r',
        parameters,
        outputs,
        inputs: raw ? inputs.map((i) => ({ ...i, contents: null })) : inputs,
        raw_input_contents: rawContents,
      }),
    ),
  );

const repositoryParameter: fc.Arbitrary<WireRepositoryParameter> = fc.oneof(
  fc.boolean().map((v) => ({ bool_param: v, parameter_choice: 'bool_param' as const })),
  longText.map((v) => ({ int64_param: v, parameter_choice: 'int64_param' as const })),
  fc.string({ maxLength: 8 }).map((v) => ({ string_param: v, parameter_choice: 'string_param' as const })),
  fc.uint8Array({ maxLength: 6 }).map((v) => ({ bytes_param: v, parameter_choice: 'bytes_param' as const })),
  fc.constant({}),
);
const repositoryKey = fc.oneof(
  keyName,
  fc.constantFrom(...PROTOTYPE_KEYS).map((k) => `file:${k}`),
);
const repositoryParameters = fc.array(fc.tuple(repositoryKey, repositoryParameter), { maxLength: 4 }).map((e) => ownRecord(e) as Record<string, WireRepositoryParameter>);

const optional = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined, freq: 2 });
const sampling: fc.Arbitrary<WireSamplingParameters> = fc
  .record({
    temperature: optional(fc.double()),
    top_p: optional(fc.double()),
    top_k: optional(int),
    min_p: optional(fc.double()),
    repetition_penalty: optional(fc.double()),
    frequency_penalty: optional(fc.double()),
    presence_penalty: optional(fc.double()),
    max_tokens: optional(fc.nat({ max: 50_000 })),
    min_tokens: optional(fc.nat({ max: 40 })),
    seed: optional(longText),
    stop: fc.array(fc.string({ maxLength: 2 }), { maxLength: 3 }),
    stop_token_ids: fc.array(fc.nat({ max: 160_000 }), { maxLength: 2 }),
    ignore_eos: optional(fc.boolean()),
    include_stop_str_in_output: optional(fc.boolean()),
    skip_special_tokens: optional(fc.boolean()),
    logit_bias: fc.array(fc.tuple(fc.nat({ max: 160_000 }).map(String), fc.float()), { maxLength: 2 }).map((e) => ownRecord(e) as Record<string, number>),
    logprobs: optional(fc.boolean()),
    top_logprobs: optional(fc.nat({ max: 30 })),
  })
  .map((s) => Object.fromEntries(Object.entries(s).filter(([, v]) => v !== undefined)) as unknown as WireSamplingParameters);

const generateRequest: fc.Arbitrary<WireGenerateRequest> = fc
  .record({
    model: fc.constantFrom('qwen3', ''),
    model_version: fc.constantFrom('', '1'),
    request_id: fc.string({ maxLength: 4 }),
    prompt: fc.constantFrom('text', 'chat', 'tokens', undefined),
    text: fc.string({ maxLength: 12 }),
    chat: fc.record({
      messages: fc.array(fc.record({ role: fc.constantFrom('user', 'system', 'assistant', 'robot', ''), content: fc.string({ maxLength: 8 }), name: fc.constantFrom('', 'n') }), { maxLength: 2 }),
    }),
    tokens: fc.record({ ids: fc.array(fc.nat({ max: 160_000 }), { maxLength: 4 }) }),
    sampling: fc.option(sampling, { nil: null }),
  })
  .map((r) => {
    // A oneof carries only its chosen member, as proto-loader decodes it.
    const { prompt, text, chat, tokens, ...rest } = r;
    return { ...rest, ...(prompt ? { prompt, [prompt]: { text, chat, tokens }[prompt] } : {}) } as WireGenerateRequest;
  });

/** Bytes: a serialized structured message, as is or with a few byte-level mutations, or plain noise. */
function mutatedBytes<T>(message: fc.Arbitrary<T>, serialize: (value: T) => Buffer): fc.Arbitrary<Buffer> {
  const edit = fc.tuple(fc.nat(), fc.nat({ max: 255 }), fc.constantFrom('flip', 'insert', 'delete', 'truncate'));
  const encoded = message.map((m) => outcomeOrEmpty(() => serialize(m)));
  return fc.oneof(
    { weight: 2, arbitrary: encoded },
    { weight: 3, arbitrary: fc.tuple(encoded, fc.array(edit, { minLength: 1, maxLength: 4 })).map(([bytes, edits]) => edits.reduce(applyEdit, bytes)) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b)) },
  );
}

function outcomeOrEmpty(run: () => Buffer): Buffer {
  try {
    return run();
  } catch {
    return Buffer.alloc(0);
  }
}

function applyEdit(bytes: Buffer, [at, value, kind]: [number, number, string]): Buffer {
  const i = bytes.length === 0 ? 0 : at % bytes.length;
  if (kind === 'flip' && bytes.length > 0) return Buffer.concat([bytes.subarray(0, i), Buffer.from([bytes[i]! ^ (value || 1)]), bytes.subarray(i + 1)]);
  if (kind === 'insert') return Buffer.concat([bytes.subarray(0, i), Buffer.from([value]), bytes.subarray(i)]);
  if (kind === 'delete') return Buffer.concat([bytes.subarray(0, i), bytes.subarray(i + 1)]);
  return bytes.subarray(0, i);
}

/** What grpc-js does with the bytes: deserialize (a throw is answered by grpc-js) and hand over the object. */
function deserialized<T>(definition: { requestDeserialize: (bytes: Buffer) => unknown }, bytes: Buffer): T | undefined {
  try {
    return definition.requestDeserialize(bytes) as T;
  } catch {
    return undefined;
  }
}

/** True when the request decoded (the suites count these, so generators must reach success). */
function checkInfer(wire: WireInferRequest): boolean {
  const result = outcome(() => inferRequestFromWire(wire));
  if (result.ok) result.value.inputs.forEach(expectConsistentTensor);
  return result.ok && result.value.inputs.length > 0;
}

function checkRepository(parameters: Record<string, WireRepositoryParameter>): void {
  const load = outcome(() => loadOverrideFromWire(parameters));
  if (load.ok) {
    // Every file parameter arrives, as an own entry of a plain object.
    const named = Object.entries(parameters).filter(([k, p]) => k.startsWith('file:') && k.length > 5 && p.parameter_choice === 'bytes_param');
    const files = load.value?.files ?? {};
    expect(Object.getPrototypeOf(files)).toBe(Object.prototype);
    expect(Object.keys(files).sort()).toEqual([...new Set(named.map(([k]) => k.slice(5)))].sort());
  }
  outcome(() => unloadOptionsFromWire(parameters));
}

function checkGenerate(wire: WireGenerateRequest): void {
  const call = outcome(() => generateCallFromWire(wire));
  if (!call.ok) return;
  const processed = outcome(() => qwen3.process({ ...call.value.input, id: 'g' }));
  if (processed.ok) {
    for (const id of processed.value.request.promptTokenIds) expect(id).toBeLessThan(qwen3.info.vocabSize);
    expect(processed.value.request.stop.maxTokens).toBeGreaterThanOrEqual(1);
  }
}

describe('gRPC codec fuzzing: decoded-message shapes', () => {
  it('any ModelInferRequest becomes consistent tensors or a protocol error', () => {
    let decoded = 0;
    fc.assert(
      fc.property(inferRequest, (wire) => void (decoded += Number(checkInfer(wire)))),
      { numRuns: runs(1500) },
    );
    expect(decoded).toBeGreaterThan(0);
  });

  it('any repository load / unload parameters become an override or a protocol error', () => {
    fc.assert(fc.property(repositoryParameters, checkRepository), { numRuns: runs(800) });
  });

  it('any GenerateRequest becomes an engine request or a protocol error', () => {
    fc.assert(fc.property(generateRequest, checkGenerate), { numRuns: runs(600) });
  });
});

describe('gRPC codec fuzzing: bytes through the real deserializers', () => {
  it('ModelInfer bytes', () => {
    const bytes = mutatedBytes(inferRequest, (m) => modelInfer.requestSerialize(m));
    let decoded = 0;
    fc.assert(
      fc.property(bytes, (b) => {
        const wire = deserialized<WireInferRequest>(modelInfer, b);
        if (wire && checkInfer(wire)) decoded++;
      }),
      { numRuns: runs(1000) },
    );
    expect(decoded).toBeGreaterThan(0);
  });

  it('RepositoryModelLoad and RepositoryModelUnload bytes', () => {
    const request = repositoryParameters.map((parameters) => ({ repository_name: '', model_name: 'm', parameters }));
    fc.assert(
      fc.property(
        mutatedBytes(request, (m) => repositoryLoad.requestSerialize(m)),
        (b) => {
          for (const definition of [repositoryLoad, repositoryUnload]) {
            const wire = deserialized<{ parameters: Record<string, WireRepositoryParameter> }>(definition, b);
            if (wire) checkRepository(wire.parameters);
          }
        },
      ),
      { numRuns: runs(600) },
    );
  });

  it('Generate bytes', () => {
    fc.assert(
      fc.property(
        mutatedBytes(generateRequest, (m) => generate.requestSerialize(m)),
        (b) => {
          const wire = deserialized<WireGenerateRequest>(generate, b);
          if (wire) checkGenerate(wire);
        },
      ),
      { numRuns: runs(500) },
    );
  });
});

describe('gRPC codec fuzzing regressions', () => {
  it('a file parameter named file:__proto__ is kept as a file, not made the prototype of the file table', () => {
    const bytes = { bytes_param: new Uint8Array([1]), parameter_choice: 'bytes_param' as const };
    const override = loadOverrideFromWire(ownRecord([['file:__proto__', bytes]]) as Record<string, WireRepositoryParameter>);
    expect(override?.files && Object.keys(override.files)).toEqual(['__proto__']);
    expect(Object.getPrototypeOf(override!.files)).toBe(Object.prototype);
  });

  it('raw BOOL bytes other than 0 and 1 are refused, as over HTTP', () => {
    const wire = {
      model_name: 'm',
      model_version: '',
      id: '',
      parameters: {},
      outputs: [],
      inputs: [{ name: 'b', datatype: 'BOOL', shape: ['2'], parameters: {}, contents: null }],
      raw_input_contents: [new Uint8Array([1, 2])],
    };
    expect(() => inferRequestFromWire(wire)).toThrow("input 'b': element 1 of BOOL data is 2, expected 0 or 1");
  });
});
