// Builds ONNX graphs in code. Every name is chosen by the caller's scope and a counter, so the
// same builder calls always give the same bytes (the model tests pin sha256s).

import { EncodedMessage } from './protobuf-writer.js';
import { ONNX_DATA_TYPE, elementCount, floatTensor, int64Tensor, type DType, type TensorValue } from './dtypes.js';

/** A float attribute must be marked: a plain number is encoded as an int. */
export class FloatAttr {
  constructor(readonly value: number) {}
}
export class FloatsAttr {
  constructor(readonly values: readonly number[]) {}
}
export const float = (value: number): FloatAttr => new FloatAttr(value);
export const floats = (values: readonly number[]): FloatsAttr => new FloatsAttr(values);

export type AttrValue = number | bigint | readonly number[] | string | FloatAttr | FloatsAttr | TensorValue;
export type Attrs = Record<string, AttrValue | undefined>;

/** A dimension: a fixed size, or a symbolic name such as 'batch_size'. */
export type Dim = number | string;

interface ValueInfo {
  name: string;
  dtype: DType;
  dims: readonly Dim[];
}

interface Node {
  opType: string;
  domain: string;
  name: string;
  /** Rewritten when output() renames a value. */
  inputs: readonly string[];
  outputs: readonly string[];
  attrs: Attrs;
}

export interface ModelOptions {
  /** Default-domain opset; 17 is what Optimum exports and ORT 1.30 fully supports. */
  opset?: number;
  producerName?: string;
  docString?: string;
  metadata?: Record<string, string>;
}

export const MS_DOMAIN = 'com.microsoft';

/**
 * ONNX external data: initializers of at least `minBytes` are handed to `append` (written to a
 * file beside the model) as they are added, so the builder keeps none of their bytes, and a model
 * past protobuf's 2 GB limit can still be written. The model records `location`, offset, length.
 */
export interface ExternalDataSink {
  /** The data file's name, relative to the model file (Optimum's is `model.onnx_data`). */
  readonly location: string;
  readonly minBytes: number;
  /** Writes the bytes and returns the offset they start at. */
  append(bytes: Uint8Array): number;
}

interface ExternalPlacement {
  readonly location: string;
  readonly offset: number;
  readonly length: number;
}

export class GraphBuilder {
  /** The float type activations and weights are stored in (fp32 model, fp16 variant). */
  readonly floatType: 'float32' | 'float16';
  private readonly inputs: ValueInfo[] = [];
  private readonly outputs: ValueInfo[] = [];
  private readonly nodes: Node[] = [];
  private readonly initializers: { name: string; value: TensorValue; external?: ExternalPlacement }[] = [];
  private readonly usedNames = new Set<string>();
  private readonly constantCache = new Map<string, string>();
  private readonly domainsUsed = new Set<string>();
  /** Values output() renamed to their graph output's name: a later op() naming the old one reads the new. */
  private readonly renamed = new Map<string, string>();
  private scopes: string[] = [];

  constructor(
    readonly graphName: string,
    floatType: 'float32' | 'float16' = 'float32',
    private readonly externalData?: ExternalDataSink,
  ) {
    this.floatType = floatType;
  }

  /** Runs `build` with names prefixed by `prefix` (e.g. 'model.layers.0.self_attn'). */
  scope<T>(prefix: string, build: () => T): T {
    this.scopes.push(prefix);
    try {
      return build();
    } finally {
      this.scopes.pop();
    }
  }

  private unique(base: string): string {
    const scoped = this.scopes.length > 0 ? `${this.scopes.join('.')}.${base}` : base;
    if (!this.usedNames.has(scoped)) {
      this.usedNames.add(scoped);
      return scoped;
    }
    for (let i = 1; ; i++) {
      const candidate = `${scoped}_${i}`;
      if (!this.usedNames.has(candidate)) {
        this.usedNames.add(candidate);
        return candidate;
      }
    }
  }

  private reserveExact(name: string): string {
    if (this.usedNames.has(name)) throw new Error(`graph value name used twice: ${name}`);
    this.usedNames.add(name);
    return name;
  }

  input(name: string, dtype: DType, dims: readonly Dim[]): string {
    this.inputs.push({ name: this.reserveExact(name), dtype, dims });
    return name;
  }

  /**
   * Exposes `value` as graph output `name`. A value a node computes is renamed (its producer and
   * consumers, and any later op() naming it, use `name`); a graph input, an initializer or a value
   * already exposed under another name goes through an Identity, which copies it on every run —
   * for the decoder's present K/V that was the whole cache, twice a layer, each step.
   */
  output(value: string, name: string, dtype: DType, dims: readonly Dim[]): void {
    const current = this.renamed.get(value) ?? value;
    if (current !== name) {
      const producer = this.nodes.find((node) => node.outputs.includes(current));
      if (producer && !this.outputs.some((output) => output.name === current)) {
        this.reserveExact(name);
        const rename = (v: string): string => (v === current ? name : v);
        for (const node of this.nodes) {
          node.inputs = node.inputs.map(rename);
          node.outputs = node.outputs.map(rename);
        }
        this.renamed.set(value, name);
        if (current !== value) this.renamed.set(current, name);
      } else {
        this.nodes.push({ opType: 'Identity', domain: '', name: this.unique(`${name}_identity`), inputs: [current], outputs: [this.reserveExact(name)], attrs: {} });
      }
    }
    this.outputs.push({ name, dtype, dims });
  }

  /** A named initializer (a weight). The exact name is kept: it is what users see in the file. */
  initializer(name: string, value: TensorValue): string {
    const scoped = this.scopes.length > 0 ? `${this.scopes.join('.')}.${name}` : name;
    const sink = this.externalData;
    if (sink && value.data.byteLength >= sink.minBytes) {
      const bytes = new Uint8Array(value.data.buffer, value.data.byteOffset, value.data.byteLength);
      const external = { location: sink.location, offset: sink.append(bytes), length: bytes.byteLength };
      // Only dims and dtype stay in memory: the values are in the sink's file now.
      this.initializers.push({ name: this.reserveExact(scoped), value: { dtype: value.dtype, dims: value.dims, data: new Uint8Array(0) }, external });
      return scoped;
    }
    this.initializers.push({ name: this.reserveExact(scoped), value });
    return scoped;
  }

  /** A float weight stored in the graph's float type. */
  weight(name: string, dims: readonly number[], values: ArrayLike<number>): string {
    return this.initializer(name, floatTensor(this.floatType, dims, values));
  }

  /** A small constant, deduplicated across the graph. */
  constant(value: TensorValue): string {
    const key = `${value.dtype}|${value.dims.join(',')}|${Array.from(value.data as ArrayLike<number | bigint>, String).join(',')}`;
    const cached = this.constantCache.get(key);
    if (cached) return cached;
    const saved = this.scopes;
    this.scopes = [];
    const name = this.unique(`const_${this.constantCache.size}`);
    this.scopes = saved;
    this.initializers.push({ name, value });
    this.constantCache.set(key, name);
    return name;
  }

  /** Scalar or 1-D int64 constant (shapes, axes, indices). */
  ints(values: readonly number[] | number): string {
    return typeof values === 'number' ? this.constant(int64Tensor([], [values])) : this.constant(int64Tensor([values.length], values));
  }

  /** Float scalar (or 1-D) constant in the graph's float type, or a given float type. */
  floats(values: readonly number[] | number, dtype: 'float32' | 'float16' | 'float64' = this.floatType): string {
    return typeof values === 'number' ? this.constant(floatTensor(dtype, [], [values])) : this.constant(floatTensor(dtype, [values.length], values));
  }

  /** Adds a node and returns its output names ('' for the optional outputs listed in `unnamed`, which the op then skips). */
  op(opType: string, inputs: readonly string[], attrs: Attrs = {}, options: { outputs?: number; unnamed?: readonly number[]; domain?: string; name?: string } = {}): string[] {
    const domain = options.domain ?? '';
    if (domain) this.domainsUsed.add(domain);
    const base = options.name ?? opType;
    const nodeName = this.unique(base);
    const count = options.outputs ?? 1;
    const outputs = Array.from({ length: count }, (_, i) => (options.unnamed?.includes(i) ? '' : count === 1 ? `${nodeName}_out` : `${nodeName}_out${i}`));
    for (const o of outputs) if (o) this.reserveExact(o);
    this.nodes.push({ opType, domain, name: nodeName, inputs: inputs.map((input) => this.renamed.get(input) ?? input), outputs, attrs });
    return outputs;
  }

  /** Adds a single-output node and returns the output's name. */
  op1(opType: string, inputs: readonly string[], attrs: Attrs = {}, options: { domain?: string; name?: string } = {}): string {
    return this.op(opType, inputs, attrs, options)[0]!;
  }

  parameterCount(): number {
    return this.initializers.reduce((sum, { value }) => sum + (value.dims.length > 0 ? elementCount(value.dims) : 0), 0);
  }

  /** Serialises the graph as an ONNX ModelProto. */
  toModel(options: ModelOptions = {}): EncodedMessage {
    const graph = new EncodedMessage();
    for (const node of this.nodes) graph.message(1, encodeNode(node));
    graph.string(2, this.graphName);
    for (const { name, value, external } of this.initializers) graph.message(5, encodeTensor(name, value, external));
    for (const input of this.inputs) graph.message(11, encodeValueInfo(input));
    for (const output of this.outputs) graph.message(12, encodeValueInfo(output));

    const model = new EncodedMessage();
    model.int(1, 8); // ir_version 8 (ONNX 1.10+), the version opset 17 exports use
    model.string(2, options.producerName ?? 'conveyor');
    model.string(3, '0.1.0');
    if (options.docString) model.string(6, options.docString);
    model.message(7, graph);
    model.message(8, new EncodedMessage().string(1, '').int(2, options.opset ?? 17));
    for (const domain of [...this.domainsUsed].sort()) model.message(8, new EncodedMessage().string(1, domain).int(2, 1));
    for (const [key, value] of Object.entries(options.metadata ?? {}).sort()) {
      model.message(14, new EncodedMessage().string(1, key).string(2, value));
    }
    return model;
  }
}

function encodeNode(node: Node): EncodedMessage {
  const m = new EncodedMessage();
  for (const input of node.inputs) m.string(1, input);
  for (const output of node.outputs) m.string(2, output);
  m.string(3, node.name);
  m.string(4, node.opType);
  for (const [name, value] of Object.entries(node.attrs)) {
    if (value !== undefined) m.message(5, encodeAttribute(name, value));
  }
  if (node.domain) m.string(7, node.domain);
  return m;
}

// AttributeProto.AttributeType values.
const ATTR = { FLOAT: 1, INT: 2, STRING: 3, TENSOR: 4, FLOATS: 6, INTS: 7 } as const;

function encodeAttribute(name: string, value: AttrValue): EncodedMessage {
  const m = new EncodedMessage().string(1, name);
  if (value instanceof FloatAttr) return m.float(2, value.value).int(20, ATTR.FLOAT);
  if (value instanceof FloatsAttr) return m.packedFloats(7, value.values).int(20, ATTR.FLOATS);
  if (typeof value === 'number' || typeof value === 'bigint') {
    if (typeof value === 'number' && !Number.isInteger(value)) throw new Error(`attribute ${name}: use float(${value}) for float attributes`);
    return m.int(3, value).int(20, ATTR.INT);
  }
  if (typeof value === 'string') return m.string(4, value).int(20, ATTR.STRING);
  if (Array.isArray(value)) return m.packedInts(8, value as number[]).int(20, ATTR.INTS);
  return m.message(5, encodeTensor('', value as TensorValue)).int(20, ATTR.TENSOR);
}

function encodeTensor(name: string, value: TensorValue, external?: ExternalPlacement): EncodedMessage {
  const m = new EncodedMessage();
  m.packedInts(1, value.dims);
  m.int(2, ONNX_DATA_TYPE[value.dtype]);
  if (name) m.string(8, name);
  if (external) {
    // TensorProto.external_data (13, key/value entries) and data_location (14) = EXTERNAL (1).
    const entry = (key: string, text: string): EncodedMessage => new EncodedMessage().string(1, key).string(2, text);
    m.message(13, entry('location', external.location));
    m.message(13, entry('offset', String(external.offset)));
    m.message(13, entry('length', String(external.length)));
    m.int(14, 1);
    return m;
  }
  // raw_data is little-endian; every platform Node runs on here is little-endian.
  m.bytes(9, new Uint8Array(value.data.buffer, value.data.byteOffset, value.data.byteLength));
  return m;
}

function encodeValueInfo(info: ValueInfo): EncodedMessage {
  const shape = new EncodedMessage();
  for (const dim of info.dims) {
    shape.message(1, typeof dim === 'number' ? new EncodedMessage().int(1, dim) : new EncodedMessage().string(2, dim));
  }
  const tensorType = new EncodedMessage().int(1, ONNX_DATA_TYPE[info.dtype]).message(2, shape);
  const type = new EncodedMessage().message(1, tensorType);
  return new EncodedMessage().string(1, info.name).message(2, type);
}
