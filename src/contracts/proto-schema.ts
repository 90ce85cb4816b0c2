// A small description language for protobuf messages: enough of a .proto's shape (field names,
// types, repeated/map labels, oneofs, declaration order) to decode a text-format or JSON tree, to
// print proto3 JSON the way Triton does, and — through `MessageValue` — to give the TypeScript
// type of the plain object such a message decodes to. The declaration is the one source: the
// type is read off it, never written beside it. Pure data: the constructors only build literals.

export type ScalarType = 'string' | 'bool' | 'int32' | 'uint32' | 'int64' | 'uint64' | 'float' | 'double';

export interface EnumType<V extends string = string> {
  readonly kind: 'enum';
  readonly name: string;
  /** Names indexed by their number (every enum here is dense from 0). */
  readonly values: readonly V[];
}

export interface MessageType<F extends readonly FieldSpec[] = readonly FieldSpec[]> {
  readonly kind: 'message';
  /** Qualified like protobuf names it in errors: `ModelConfig`, `ModelInput`, `ModelWarmup.Input`. */
  readonly name: string;
  /** In .proto declaration order, which is the order protobuf prints JSON in. */
  readonly fields: F;
}

export type FieldType = ScalarType | EnumType | MessageType;
export type FieldLabel = 'single' | 'repeated' | 'map';

export interface FieldSpec<N extends string = string, T extends FieldType = FieldType, L extends FieldLabel = FieldLabel> {
  readonly name: N;
  readonly type: T;
  readonly label: L;
  /** Map key type (map fields only). */
  readonly mapKey?: 'string' | 'uint64';
  /** Name of the oneof this field belongs to; such fields have presence and no default. */
  readonly oneof?: string;
}

export const enumType = <const V extends readonly string[]>(name: string, values: V): EnumType<V[number]> => ({ kind: 'enum', name, values });
export const messageType = <const F extends readonly FieldSpec[]>(name: string, fields: F): MessageType<F> => ({ kind: 'message', name, fields });

export function single<const N extends string, const T extends FieldType>(name: N, type: T): FieldSpec<N, T, 'single'>;
export function single<const N extends string, const T extends FieldType, const O extends string>(name: N, type: T, oneof: O): FieldSpec<N, T, 'single'> & { readonly oneof: O };
export function single(name: string, type: FieldType, oneof?: string): FieldSpec {
  return oneof === undefined ? { name, type, label: 'single' } : { name, type, label: 'single', oneof };
}
export const repeated = <const N extends string, const T extends FieldType>(name: N, type: T): FieldSpec<N, T, 'repeated'> => ({ name, type, label: 'repeated' });
export const mapOf = <const N extends string, const T extends FieldType>(name: N, mapKey: 'string' | 'uint64', type: T): FieldSpec<N, T, 'map'> => ({ name, type, label: 'map', mapKey });

// The decoded shape. 64-bit integers are numbers (the decoder refuses what a double cannot hold
// exactly); map keys are strings as in JSON. After the decoder fills proto3 defaults, scalars,
// enums, repeated fields and maps are always present; message fields and oneof members are
// present only when the source set them.

type ScalarValue<T extends ScalarType> = T extends 'string' ? string : T extends 'bool' ? boolean : number;

export type TypeValue<T extends FieldType> = T extends ScalarType ? ScalarValue<T> : T extends EnumType<infer V> ? V : T extends MessageType<infer F> ? FieldsValue<F> : never;

type FieldValue<S extends FieldSpec> = S['label'] extends 'repeated' ? TypeValue<S['type']>[] : S['label'] extends 'map' ? Record<string, TypeValue<S['type']>> : TypeValue<S['type']>;

type HasPresence<S extends FieldSpec> = S extends { readonly label: 'single' } ? (S extends { readonly oneof: string } ? true : S['type'] extends MessageType ? true : false) : false;

type FieldsValue<F extends readonly FieldSpec[]> = Flat<
  { -readonly [S in F[number] as HasPresence<S> extends true ? never : S['name']]: FieldValue<S> } & { -readonly [S in F[number] as HasPresence<S> extends true ? S['name'] : never]?: FieldValue<S> }
>;

type Flat<T> = { [K in keyof T]: T[K] };

/** The plain object a message of this type decodes to (proto field names, defaults filled). */
export type MessageValue<M extends MessageType> = TypeValue<M>;
