// The tensor datatypes, declared once: each KServe v2 / Triton wire name with the typed array its
// elements are stored in (so its bytes per element), its kind, ONNX Runtime's element type and
// model_config.proto's DataType. The HTTP and gRPC codecs, the batcher, the ORT seam, config
// auto-complete and the config schema's enum all read this table. Keys follow the proto enum's
// order (TYPE_STRING is BYTES on the wire), so the schema takes its values from here.

/** The typed array constructors tensor data is stored in. */
export type FixedStorage =
  | Uint8ArrayConstructor
  | Uint16ArrayConstructor
  | Uint32ArrayConstructor
  | BigUint64ArrayConstructor
  | Int8ArrayConstructor
  | Int16ArrayConstructor
  | Int32ArrayConstructor
  | BigInt64ArrayConstructor
  | Float32ArrayConstructor
  | Float64ArrayConstructor;

interface DataTypeFacts {
  /** Element storage: BOOL as 0/1 bytes, FP16 and BF16 as bit patterns; BYTES is one Uint8Array per element (null). */
  readonly storage: FixedStorage | null;
  readonly kind: 'bool' | 'uint' | 'int' | 'float' | 'bytes';
  /** onnxruntime-common's Tensor.Type. */
  readonly ort: string;
  /** model_config.proto's DataType. */
  readonly config: `TYPE_${string}`;
}

export const DATATYPES = {
  BOOL: { storage: Uint8Array, kind: 'bool', ort: 'bool', config: 'TYPE_BOOL' },
  UINT8: { storage: Uint8Array, kind: 'uint', ort: 'uint8', config: 'TYPE_UINT8' },
  UINT16: { storage: Uint16Array, kind: 'uint', ort: 'uint16', config: 'TYPE_UINT16' },
  UINT32: { storage: Uint32Array, kind: 'uint', ort: 'uint32', config: 'TYPE_UINT32' },
  UINT64: { storage: BigUint64Array, kind: 'uint', ort: 'uint64', config: 'TYPE_UINT64' },
  INT8: { storage: Int8Array, kind: 'int', ort: 'int8', config: 'TYPE_INT8' },
  INT16: { storage: Int16Array, kind: 'int', ort: 'int16', config: 'TYPE_INT16' },
  INT32: { storage: Int32Array, kind: 'int', ort: 'int32', config: 'TYPE_INT32' },
  INT64: { storage: BigInt64Array, kind: 'int', ort: 'int64', config: 'TYPE_INT64' },
  FP16: { storage: Uint16Array, kind: 'float', ort: 'float16', config: 'TYPE_FP16' },
  FP32: { storage: Float32Array, kind: 'float', ort: 'float32', config: 'TYPE_FP32' },
  FP64: { storage: Float64Array, kind: 'float', ort: 'float64', config: 'TYPE_FP64' },
  BYTES: { storage: null, kind: 'bytes', ort: 'string', config: 'TYPE_STRING' },
  BF16: { storage: Uint16Array, kind: 'float', ort: 'bfloat16', config: 'TYPE_BF16' },
} as const satisfies Record<string, DataTypeFacts>;

type Table = typeof DATATYPES;
/** KServe v2 / Triton wire datatypes. */
export type DataType = keyof Table;
export type FixedDataType = Exclude<DataType, 'BYTES'>;
/** ONNX Runtime's element type names. */
export type OrtElementType = Table[DataType]['ort'];
/** model_config.proto's DataType names, TYPE_INVALID aside. */
export type ConfigDataTypeName = Table[DataType]['config'];

const NAMES = Object.keys(DATATYPES) as DataType[];

/** The config schema's enum values, in the proto's order. */
export const CONFIG_DATA_TYPES: readonly ConfigDataTypeName[] = NAMES.map((name) => DATATYPES[name].config);

export function isDataType(value: unknown): value is DataType {
  return typeof value === 'string' && Object.hasOwn(DATATYPES, value);
}

/** The typed array a fixed-width datatype's elements are stored in. */
export function storageOf(datatype: FixedDataType): FixedStorage {
  return DATATYPES[datatype].storage;
}

/** Bytes per element of a fixed-width datatype. */
export function elementSize(datatype: FixedDataType): number {
  return DATATYPES[datatype].storage.BYTES_PER_ELEMENT;
}

/** Inclusive value range of an integer datatype (bigint, exact for the 64-bit ones); undefined for any other. */
export function integerRange(datatype: DataType): readonly [bigint, bigint] | undefined {
  const { kind, storage } = DATATYPES[datatype];
  if (storage === null || (kind !== 'int' && kind !== 'uint')) return undefined;
  const bits = BigInt(storage.BYTES_PER_ELEMENT * 8);
  return kind === 'int' ? [-(1n << (bits - 1n)), (1n << (bits - 1n)) - 1n] : [0n, (1n << bits) - 1n];
}

const BY_ORT = new Map<string, DataType>(NAMES.map((name) => [DATATYPES[name].ort, name]));
const BY_CONFIG = new Map<string, DataType>(NAMES.map((name) => [DATATYPES[name].config, name]));

/** The wire datatype of an ONNX Runtime element type, or undefined when it has none. */
export const dataTypeOfOrt = (type: string): DataType | undefined => BY_ORT.get(type);

/** The wire datatype of a config.pbtxt TYPE_* name (TYPE_STRING travels as BYTES), or undefined (TYPE_INVALID). */
export const dataTypeOfConfig = (type: string): DataType | undefined => BY_CONFIG.get(type);
