// Fuzzing the config layer end to end (tokenize → parse → decode → fill defaults → normalize →
// validate) in both its readers: config.pbtxt text and the repository load API's JSON. Documents
// are generated from the real schema (every field name, nested messages, maps, oneofs) with
// literals at the edges of each type, printed as text format or JSON, then sometimes mangled.
// Any document yields a ModelConfig that prints and re-reads to itself, or a positioned
// INVALID_ARG / UNSUPPORTED ConveyorError.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { modelConfigFromJson, modelConfigToJson, parseModelConfig } from '../../../src/repository/config/index.js';
import { MODEL_CONFIG } from '../../../src/contracts/model-config-schema.js';
import type { FieldSpec, FieldType, MessageType } from '../../../src/contracts/proto-schema.js';
import { jsonName } from '../../../src/repository/config/proto3.js';
import { mutatedText, outcome, PROTOTYPE_KEYS, runs, trickyString } from './support.js';

const DIR = 'm';

/** A generated document, printable both as text format and as JSON. */
type Doc =
  | { readonly kind: 'scalar'; readonly text: string; readonly json: unknown }
  | { readonly kind: 'message'; readonly fields: readonly (readonly [string, Doc])[] }
  | { readonly kind: 'list'; readonly items: readonly Doc[] }
  | { readonly kind: 'map'; readonly entries: readonly (readonly [Doc, Doc])[] };

const scalar = (text: string, json: unknown): Doc => ({ kind: 'scalar', text, json });
const quoted = (s: string): Doc => scalar(JSON.stringify(s), s);

const INTEGERS: Doc[] = [
  scalar('0', 0),
  scalar('1', 1),
  scalar('2', 2),
  scalar('8', 8),
  scalar('-1', -1),
  scalar('-2', -2),
  scalar('0x1F', 31),
  scalar('017', 15),
  scalar('2147483648', 2147483648),
  scalar('-2147483649', -2147483649),
  scalar('4294967296', 4294967296),
  scalar('9007199254740993', '9007199254740993'),
  scalar('18446744073709551616', '18446744073709551616'),
  scalar('0xFFFFFFFFFFFFFFFFFF', '1e400'),
  scalar('1.5', 1.5),
  scalar('1e3', 1e3),
  scalar('"7"', '7'),
];
const FLOATS: Doc[] = [
  scalar('0.5', 0.5),
  scalar('-1e-9', -1e-9),
  scalar('1e400', Infinity),
  scalar('inf', 'Infinity'),
  scalar('-inf', '-Infinity'),
  scalar('nan', 'NaN'),
  scalar('2.5f', 2.5),
  scalar('.5', 0.5),
  scalar('3', 3),
  scalar('-infinity', '-Infinity'),
];
const BOOLS: Doc[] = [scalar('true', true), scalar('false', false), scalar('t', true), scalar('False', false), scalar('1', true), scalar('0', false), scalar('yes', 'yes')];
const NAMES = ['a', 'b', 'input_ids', DIR, 'x y', ''];

/** A literal for a scalar field: usually of its type, sometimes another type's. */
function scalarDoc(type: FieldType): fc.Arbitrary<Doc> {
  const wrong = fc.oneof(fc.constantFrom(...INTEGERS, ...FLOATS, ...BOOLS), trickyString.map(quoted), fc.constantFrom(scalar('IDENT', 'IDENT'), scalar('-x', '-x')));
  let right: fc.Arbitrary<Doc>;
  if (typeof type === 'object' && type.kind === 'enum') {
    right = fc.oneof(
      fc.constantFrom(...type.values).map((v) => scalar(v, v)),
      fc.nat({ max: type.values.length + 1 }).map((n) => scalar(String(n), n)),
    );
  } else if (type === 'string') right = fc.oneof(fc.constantFrom(...NAMES, 'onnxruntime', 'llm', 'onnxruntime_onnx', 'ensemble', 'labels.txt', '../x').map(quoted), trickyString.map(quoted));
  else if (type === 'bool') right = fc.constantFrom(...BOOLS);
  else if (type === 'float' || type === 'double') right = fc.constantFrom(...FLOATS, ...INTEGERS.slice(0, 6));
  else right = fc.constantFrom(...INTEGERS);
  return fc.oneof({ weight: 6, arbitrary: right }, { weight: 1, arbitrary: wrong });
}

const isMessage = (type: FieldType): type is MessageType => typeof type === 'object' && type.kind === 'message';

function valueDoc(type: FieldType, depth: number): fc.Arbitrary<Doc> {
  if (!isMessage(type)) return scalarDoc(type);
  if (depth <= 0) return fc.constant<Doc>({ kind: 'message', fields: [] });
  return fc.oneof({ weight: 8, arbitrary: messageDoc(type, depth - 1) }, { weight: 1, arbitrary: scalarDoc('string') });
}

function fieldDoc(spec: FieldSpec, depth: number): fc.Arbitrary<readonly [string, Doc]> {
  const value = valueDoc(spec.type, depth);
  let doc: fc.Arbitrary<Doc>;
  if (spec.label === 'repeated') doc = fc.oneof({ weight: 4, arbitrary: fc.array(value, { maxLength: 3 }).map((items): Doc => ({ kind: 'list', items })) }, { weight: 1, arbitrary: value });
  else if (spec.label === 'map') {
    const key =
      spec.mapKey === 'uint64' ? fc.constantFrom(...INTEGERS.slice(0, 6), quoted('x')) : fc.oneof(fc.constantFrom(...NAMES, 'precision', ...PROTOTYPE_KEYS).map(quoted), trickyString.map(quoted));
    doc = fc.array(fc.tuple(key, value), { maxLength: 3 }).map((entries): Doc => ({ kind: 'map', entries }));
  } else doc = fc.oneof({ weight: 8, arbitrary: value }, { weight: 1, arbitrary: fc.array(value, { maxLength: 2 }).map((items): Doc => ({ kind: 'list', items })) });
  // JSON may spell a field in lowerCamelCase; an unknown name now and then.
  const name = fc.oneof(
    { weight: 10, arbitrary: fc.constant(spec.name) },
    { weight: 1, arbitrary: fc.constant(jsonName(spec.name)) },
    { weight: 1, arbitrary: fc.constantFrom('bogus', ...PROTOTYPE_KEYS) },
  );
  return fc.tuple(name, doc);
}

function messageDoc(type: MessageType, depth: number): fc.Arbitrary<Doc> {
  if (type.fields.length === 0) return fc.constant<Doc>({ kind: 'message', fields: [] });
  const field = fc.constantFrom(...type.fields).chain((spec) => fieldDoc(spec, depth));
  return fc.array(field, { maxLength: 5 }).map((fields): Doc => ({ kind: 'message', fields }));
}

const field = (name: string) => MODEL_CONFIG.fields.find((f) => f.name === name)!;

/** A tensor section that validates: one named FP32 tensor with fixed dims. */
const plainTensors = (name: string): readonly [string, Doc] => [
  name === 'input' ? 'input' : 'output',
  {
    kind: 'list',
    items: [
      {
        kind: 'message',
        fields: [
          ['name', quoted(name === 'input' ? 'x' : 'y')],
          ['data_type', scalar('TYPE_FP32', 'TYPE_FP32')],
          ['dims', { kind: 'list', items: [scalar('2', 2)] }],
        ],
      },
    ],
  },
];

/** Tensors that validate most of the time, else generated from the schema, else none. */
const tensorSection = (name: 'input' | 'output') =>
  fc.oneof({ weight: 4, arbitrary: fc.constant(plainTensors(name)) }, { weight: 2, arbitrary: fieldDoc(field(name), 3) }, { weight: 1, arbitrary: fc.constant(undefined) });

/** A ModelConfig document: usually a plausible served model plus a few fields generated from the schema. */
const configDoc: fc.Arbitrary<Doc> = fc
  .tuple(
    fc.oneof({ weight: 6, arbitrary: fc.constantFrom('onnxruntime', 'llm') }, { weight: 1, arbitrary: fc.constantFrom('tensorflow', '', ...PROTOTYPE_KEYS) }),
    tensorSection('input'),
    tensorSection('output'),
    fc.array(
      fc.constantFrom(...MODEL_CONFIG.fields).chain((spec) => fieldDoc(spec, 4)),
      { maxLength: 3 },
    ),
  )
  .map(([backend, input, output, rest]): Doc => {
    const fields: (readonly [string, Doc])[] = [['backend', quoted(backend)]];
    if (input) fields.push(input);
    if (output) fields.push(output);
    fields.push(...rest.filter(([name]) => !fields.some(([taken]) => taken === name)));
    return { kind: 'message', fields };
  });

function toText(doc: Doc): string {
  switch (doc.kind) {
    case 'scalar':
      return doc.text;
    case 'list':
      return `[${doc.items.map(toText).join(', ')}]`;
    case 'map':
      return `[${doc.entries.map(([k, v]) => `{ key: ${toText(k)} value: ${toText(v)} }`).join(', ')}]`;
    case 'message':
      return `{ ${doc.fields.map(([name, value]) => fieldText(name, value)).join('\n')} }`;
  }
}

function fieldText(name: string, value: Doc): string {
  if (value.kind === 'map') return `${name} ${toText(value)}`;
  return value.kind === 'message' ? `${name} ${toText(value)}` : `${name}: ${toText(value)}`;
}

const documentText = (doc: Doc): string => (doc.kind === 'message' ? doc.fields.map(([n, v]) => fieldText(n, v)).join('\n') : toText(doc));

function toJson(doc: Doc): unknown {
  switch (doc.kind) {
    case 'scalar':
      return doc.json;
    case 'list':
      return doc.items.map(toJson);
    case 'map':
      return ownObject(doc.entries.map(([k, v]) => [String(toJson(k)), toJson(v)]));
    case 'message':
      return ownObject(doc.fields.map(([n, v]) => [n, toJson(v)]));
  }
}

function ownObject(entries: [string, unknown][]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of entries) Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
  return out;
}

const stringify = (value: unknown): string => JSON.stringify(value, (_k, v: unknown) => (typeof v === 'number' && !Number.isFinite(v) ? String(v) : v));

/** Every object in a config is plain data: no replaced prototype, nothing inherited. */
function expectPlainData(value: unknown, path = 'config'): void {
  if (typeof value !== 'object' || value === null) return;
  const proto: unknown = Object.getPrototypeOf(value);
  expect(proto === Object.prototype || proto === Array.prototype, `${path} has a foreign prototype`).toBe(true);
  for (const [key, item] of Object.entries(value)) expectPlainData(item, `${path}.${key}`);
}

/** A served config: named after its directory, a known backend, instances, and a stable JSON form. */
function expectServable(config: ReturnType<typeof parseModelConfig>): void {
  expect(config.name).toBe(DIR);
  expect(['onnxruntime', 'llm']).toContain(config.backend);
  expect(config.instance_group.length).toBeGreaterThan(0);
  for (const group of config.instance_group) expect(group.count).toBeGreaterThan(0);
  expectPlainData(config);
  const printed = modelConfigToJson(config);
  expect(modelConfigToJson(modelConfigFromJson(printed, DIR))).toBe(printed);
}

describe('config fuzzing', () => {
  it('any text-format document parses to a servable config or a positioned error', () => {
    let served = 0;
    fc.assert(
      fc.property(configDoc, (doc) => {
        const result = outcome(() => parseModelConfig(documentText(doc), 'config.pbtxt', DIR));
        if (result.ok) {
          served++;
          expectServable(result.value);
        } else expect(result.error.message).toMatch(/^config\.pbtxt(:\d+:\d+)?: /);
      }),
      { numRuns: runs(500) },
    );
    // The generator must reach validation and beyond, not only syntax errors.
    expect(served).toBeGreaterThan(0);
  });

  it('any JSON document parses to a servable config or a positioned error', () => {
    let served = 0;
    fc.assert(
      fc.property(configDoc, (doc) => {
        const result = outcome(() => modelConfigFromJson(stringify(toJson(doc)), DIR));
        if (result.ok) {
          served++;
          expectServable(result.value);
        } else expect(result.error.message).toMatch(/^config(:\d+:\d+)?: /);
      }),
      { numRuns: runs(500) },
    );
    expect(served).toBeGreaterThan(0);
  });

  it('mangled documents and raw text never escape as a non-protocol error', () => {
    const text = fc.oneof(
      configDoc.map(documentText),
      configDoc.map((d) => stringify(toJson(d))),
      fc.string({ maxLength: 60 }),
      fc.string({ unit: 'binary', maxLength: 60 }),
    );
    fc.assert(
      fc.property(mutatedText(text), (source) => {
        const pbtxt = outcome(() => parseModelConfig(source, 'config.pbtxt', DIR));
        if (pbtxt.ok) expectServable(pbtxt.value);
        const json = outcome(() => modelConfigFromJson(source, DIR));
        if (json.ok) expectServable(json.value);
      }),
      { numRuns: runs(500) },
    );
  });

  it('deep nesting is refused with a positioned error, not a stack overflow', () => {
    fc.assert(
      fc.property(fc.integer({ min: 90, max: 3_000 }), fc.constantFrom('{', '<', '[', '{"a":', '['), (depth, open) => {
        const pbtxt = outcome(() => parseModelConfig(`optimization ${open.repeat(depth)}`, 'config.pbtxt', DIR));
        expect(pbtxt.ok).toBe(false);
        const json = outcome(() => modelConfigFromJson(`{"optimization":${open.repeat(depth)}`, DIR));
        expect(json.ok).toBe(false);
      }),
      { numRuns: runs(25) },
    );
  });
});

describe('config fuzzing regressions', () => {
  const BASE = 'backend: "onnxruntime"\ninput [{ name: "x" data_type: TYPE_FP32 dims: [1] }]\noutput [{ name: "y" data_type: TYPE_FP32 dims: [1] }]\n';

  it('a document nested 20,000 deep is an INVALID_ARG naming the limit (was RangeError)', () => {
    const deep = 'a {'.repeat(20_000) + '}'.repeat(20_000);
    expect(() => parseModelConfig(deep, 'config.pbtxt', DIR)).toThrow(/config\.pbtxt:1:\d+: messages nest more than 100 levels deep/);
    const deepJson = `${'{"a":'.repeat(20_000)}1${'}'.repeat(20_000)}`;
    expect(() => modelConfigFromJson(deepJson, DIR)).toThrow(/objects nest more than 100 levels deep/);
    expect(() => modelConfigFromJson(`{"a":${'['.repeat(20_000)}`, DIR)).toThrow(/nested arrays have no protobuf meaning/);
  });

  it('backend "__proto__" or "valueOf" is refused as unsupported, not served (was accepted through the prototype)', () => {
    for (const backend of ['__proto__', 'valueOf', 'constructor']) {
      expect(() => parseModelConfig(`backend: "${backend}"`, 'config.pbtxt', DIR)).toThrow(new RegExp(`backend '${backend}' is not supported`));
    }
  });

  it('a map key "__proto__" is an ordinary entry, not a new prototype for the map', () => {
    const text = `${BASE}parameters { key: "__proto__" value { string_value: "x" } }`;
    const fromText = parseModelConfig(text, 'config.pbtxt', DIR);
    expect(Object.getPrototypeOf(fromText.parameters)).toBe(Object.prototype);
    expect(Object.keys(fromText.parameters)).toEqual(['__proto__']);
    expect(modelConfigToJson(fromText)).toContain('"parameters":{"__proto__":{"string_value":"x"}}');
    const fromJson = modelConfigFromJson(modelConfigToJson(fromText), DIR);
    expect(Object.getPrototypeOf(fromJson.parameters)).toBe(Object.prototype);
    expect(modelConfigToJson(fromJson)).toBe(modelConfigToJson(fromText));
  });
});
