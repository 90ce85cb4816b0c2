// A small description language for protobuf messages: enough of model_config.proto's shape
// (field names, types, repeated/map labels, oneofs, declaration order) to decode a text-format
// or JSON tree and to print proto3 JSON the way Triton does.

export type ScalarType = 'string' | 'bool' | 'int32' | 'uint32' | 'int64' | 'uint64' | 'float' | 'double';

export interface EnumType {
  readonly kind: 'enum';
  readonly name: string;
  /** Names indexed by their number (every enum here is dense from 0). */
  readonly values: readonly string[];
}

export interface MessageType {
  readonly kind: 'message';
  /** Qualified like protobuf names it in errors: `ModelConfig`, `ModelInput`, `ModelWarmup.Input`. */
  readonly name: string;
  /** In .proto declaration order, which is the order protobuf prints JSON in. */
  readonly fields: readonly FieldSpec[];
}

export type FieldType = ScalarType | EnumType | MessageType;

export interface FieldSpec {
  readonly name: string;
  readonly type: FieldType;
  readonly label: 'single' | 'repeated' | 'map';
  /** Map key type (map fields only). */
  readonly mapKey?: 'string' | 'uint64';
  /** Name of the oneof this field belongs to; such fields have presence and no default. */
  readonly oneof?: string;
}

export const enumType = (name: string, values: readonly string[]): EnumType => ({ kind: 'enum', name, values });
export const messageType = (name: string, fields: readonly FieldSpec[]): MessageType => ({ kind: 'message', name, fields });

export const single = (name: string, type: FieldType, oneof?: string): FieldSpec =>
  oneof === undefined ? { name, type, label: 'single' } : { name, type, label: 'single', oneof };
export const repeated = (name: string, type: FieldType): FieldSpec => ({ name, type, label: 'repeated' });
export const mapOf = (name: string, mapKey: 'string' | 'uint64', type: FieldType): FieldSpec => ({ name, type, label: 'map', mapKey });

/** proto3 JSON name of a field: lowerCamelCase of the proto name. */
export const jsonName = (name: string): string => name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());

/** Default of a scalar or enum field in proto3 (what an unset field reads as). */
export function defaultValue(type: ScalarType | EnumType): string | number | boolean {
  if (typeof type !== 'string') return type.values[0]!;
  if (type === 'string') return '';
  if (type === 'bool') return false;
  return 0;
}
