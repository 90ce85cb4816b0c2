// Applies a message schema to a parsed tree: checks every field name, value type, range,
// repetition and oneof the way protobuf's parsers do, and produces plain objects keyed by proto
// field names. Positions of every field go into a side table for later validation errors.
import { describeValue, type FieldNode, type MessageNode, type ValueNode } from './ast.js';
import { configError, formatPos, SourcePositions, type Pos } from './locate.js';
import { messageType, single, type EnumType, type FieldSpec, type MessageType, type MessageValue, type ScalarType } from '../../contracts/proto-schema.js';
import { defaultValue, jsonName } from './proto3.js';
import { setOwnEntry } from '../../contracts/own-entry.js';

export type Decoded = Record<string, unknown>;

export interface DecodeResult {
  readonly value: Decoded;
  readonly positions: SourcePositions;
}

export function decodeTree(root: MessageNode, type: MessageType, label: string): DecodeResult {
  const decoder = new Decoder(label);
  return { value: decoder.message(root, type), positions: decoder.positions };
}

const INT_RANGES: Readonly<Record<'int32' | 'uint32' | 'int64' | 'uint64', readonly [bigint, bigint]>> = {
  int32: [-(2n ** 31n), 2n ** 31n - 1n],
  uint32: [0n, 2n ** 32n - 1n],
  int64: [-(2n ** 63n), 2n ** 63n - 1n],
  uint64: [0n, 2n ** 64n - 1n],
};
const TRUE_WORDS = new Set(['true', 'True', 't']);
const FALSE_WORDS = new Set(['false', 'False', 'f']);
const FLOAT_WORDS: Readonly<Record<string, number>> = { inf: Infinity, infinity: Infinity, nan: NaN };
const JSON_FLOAT_WORDS: Readonly<Record<string, number>> = { NaN: NaN, Infinity: Infinity, '-Infinity': -Infinity };

/** The value of an integer literal as protobuf reads it: hex `0x1F`, octal `017`, decimal. */
export function integerLiteral(text: string, negative: boolean): bigint {
  let value: bigint;
  if (/^0[xX]/.test(text)) value = BigInt(text);
  else if (/^0[0-7]+$/.test(text)) value = BigInt(`0o${text.slice(1)}`);
  else value = BigInt(text);
  return negative ? -value : value;
}

function findField(type: MessageType, name: string, json: boolean): FieldSpec | undefined {
  return type.fields.find((f) => f.name === name) ?? (json ? type.fields.find((f) => jsonName(f.name) === name) : undefined);
}

class Decoder {
  readonly positions = new SourcePositions();

  constructor(private readonly label: string) {}

  private fail(pos: Pos, message: string): never {
    throw configError(this.label, pos, message);
  }

  message(node: MessageNode, type: MessageType): Decoded {
    const out: Decoded = {};
    this.positions.set(out, '', node.pos);
    const seen = new Map<string, Pos>();
    const oneofs = new Map<string, { name: string; pos: Pos }>();
    for (const field of node.fields) {
      const spec = findField(type, field.name, node.json);
      if (!spec) this.fail(field.pos, `unknown field '${field.name}' in ${type.name}`);
      this.positions.set(out, spec.name, field.pos);
      if (spec.label === 'single') this.single(out, spec, field, seen, oneofs, node.json);
      else if (spec.label === 'repeated') this.repeated(out, spec, field, node.json);
      else this.map(out, spec, field, node.json);
    }
    return out;
  }

  private single(out: Decoded, spec: FieldSpec, field: FieldNode, seen: Map<string, Pos>, oneofs: Map<string, { name: string; pos: Pos }>, json: boolean): void {
    if (field.list) this.fail(field.pos, `field '${spec.name}' is not repeated and cannot take a list`);
    const first = seen.get(spec.name);
    if (first) this.fail(field.pos, `field '${spec.name}' is set more than once (first at ${formatPos(first)})`);
    seen.set(spec.name, field.pos);
    if (spec.oneof) {
      const other = oneofs.get(spec.oneof);
      if (other) this.fail(field.pos, `field '${spec.name}' cannot be set together with '${other.name}' (at ${formatPos(other.pos)}): both belong to oneof '${spec.oneof}'`);
      oneofs.set(spec.oneof, { name: spec.name, pos: field.pos });
    }
    out[spec.name] = this.value(spec, field.values[0]!, json);
  }

  private repeated(out: Decoded, spec: FieldSpec, field: FieldNode, json: boolean): void {
    if (json && !field.list) this.fail(field.pos, `field '${spec.name}' is repeated and needs a JSON array`);
    const list = (out[spec.name] ??= []) as unknown[];
    for (const node of field.values) {
      this.positions.set(out, `${spec.name}.${list.length}`, node.pos);
      list.push(this.value(spec, node, json));
    }
  }

  private map(out: Decoded, spec: FieldSpec, field: FieldNode, json: boolean): void {
    const record = (out[spec.name] ??= {}) as Decoded;
    if (json) {
      const node = field.values[0]!;
      if (field.list || node.kind !== 'message') this.fail(field.pos, `map field '${spec.name}' needs a JSON object`);
      for (const member of node.fields) {
        if (member.list) this.fail(member.pos, `map field '${spec.name}' cannot hold a list under key "${member.name}"`);
        const key = this.mapKey(spec, member.name, member.pos);
        this.positions.set(out, `${spec.name}.${key}`, member.pos);
        setOwnEntry(record, key, this.value(spec, member.values[0]!, true));
      }
      return;
    }
    const entryType = messageType(`${spec.name} entry`, [single('key', spec.mapKey === 'uint64' ? 'uint64' : 'string'), single('value', spec.type)]);
    for (const node of field.values) {
      if (node.kind !== 'message') this.fail(node.pos, `map field '${spec.name}' needs entries like { key: … value: … }, found ${describeValue(node)}`);
      const entry = this.message(node, entryType);
      const key = String(entry.key ?? defaultValue(spec.mapKey === 'uint64' ? 'uint64' : 'string'));
      this.positions.set(out, `${spec.name}.${key}`, node.pos);
      setOwnEntry(record, key, entry.value ?? (typeof spec.type === 'object' && spec.type.kind === 'message' ? {} : defaultValue(spec.type)));
    }
  }

  /** A JSON object key of a map field (text-format keys are decoded as the entry's `key` field). */
  private mapKey(spec: FieldSpec, key: string, pos: Pos): string {
    if (spec.mapKey !== 'uint64') return key;
    if (!/^\d+$/.test(key)) this.fail(pos, `map field '${spec.name}' needs non-negative integer keys, found "${key}"`);
    return String(this.integer({ ...spec, name: `${spec.name} key` }, 'uint64', { kind: 'string', value: key, pos }, true));
  }

  private value(spec: FieldSpec, node: ValueNode, json: boolean): unknown {
    const type = spec.type;
    if (typeof type === 'string') return this.scalar(spec, type, node, json);
    if (type.kind === 'enum') return this.enumValue(spec, type, node, json);
    if (node.kind !== 'message') this.fail(node.pos, `field '${spec.name}' needs a message ({ … }), found ${describeValue(node)}`);
    return this.message(node, type);
  }

  private enumValue(spec: FieldSpec, type: EnumType, node: ValueNode, json: boolean): string {
    if (node.kind === 'identifier' || (json && node.kind === 'string')) {
      const name = node.kind === 'identifier' ? node.name : node.value;
      if (node.kind === 'identifier' && node.negative) this.fail(node.pos, `field '${spec.name}' needs a ${type.name} value, found ${describeValue(node)}`);
      if (!type.values.includes(name)) this.fail(node.pos, `unknown ${type.name} value '${name}' for field '${spec.name}' (expected one of ${type.values.join(', ')})`);
      return name;
    }
    if (node.kind === 'number' && node.integer && !node.negative) {
      const index = integerLiteral(node.text, false);
      if (index < BigInt(type.values.length)) return type.values[Number(index)]!;
      this.fail(node.pos, `unknown ${type.name} number ${node.text} for field '${spec.name}'`);
    }
    return this.fail(node.pos, `field '${spec.name}' needs a ${type.name} value, found ${describeValue(node)}`);
  }

  private scalar(spec: FieldSpec, type: ScalarType, node: ValueNode, json: boolean): unknown {
    if (type === 'string') {
      if (node.kind !== 'string') this.fail(node.pos, `field '${spec.name}' needs a string, found ${describeValue(node)}`);
      return node.value;
    }
    if (type === 'bool') return this.bool(spec, node, json);
    if (type === 'float' || type === 'double') return this.float(spec, node, json);
    return this.integer(spec, type, node, json);
  }

  /** Text format also takes True/t/False/f and 0/1; JSON only true/false. */
  private bool(spec: FieldSpec, node: ValueNode, json: boolean): boolean {
    if (node.kind === 'identifier' && !node.negative) {
      if (json ? node.name === 'true' : TRUE_WORDS.has(node.name)) return true;
      if (json ? node.name === 'false' : FALSE_WORDS.has(node.name)) return false;
    }
    if (!json && node.kind === 'number' && node.integer && !node.negative && (node.text === '0' || node.text === '1')) return node.text === '1';
    return this.fail(node.pos, `field '${spec.name}' needs true or false, found ${describeValue(node)}`);
  }

  private float(spec: FieldSpec, node: ValueNode, json: boolean): number {
    const sign = (negative: boolean) => (negative ? -1 : 1);
    if (node.kind === 'number') {
      const magnitude = node.integer ? Number(integerLiteral(node.text, false)) : Number(node.text.replace(/[fF]$/, ''));
      return sign(node.negative) * magnitude;
    }
    if (node.kind === 'identifier' && !json) {
      const word = FLOAT_WORDS[node.name.toLowerCase()];
      if (word !== undefined) return sign(node.negative) * word;
    }
    if (node.kind === 'string' && json) {
      const special = JSON_FLOAT_WORDS[node.value];
      if (special !== undefined) return special;
      if (/^-?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(node.value)) return Number(node.value);
    }
    return this.fail(node.pos, `field '${spec.name}' needs a number, found ${describeValue(node)}`);
  }

  /** `json` allows what proto3 JSON allows: quoted integers and integral floats like 1e3. */
  private integer(spec: FieldSpec, type: 'int32' | 'uint32' | 'int64' | 'uint64', node: ValueNode, json: boolean): number {
    let value: bigint | undefined;
    if (node.kind === 'number' && node.integer) value = integerLiteral(node.text, node.negative);
    else if (node.kind === 'number' && json) {
      const float = Number(node.text) * (node.negative ? -1 : 1);
      if (Number.isInteger(float)) value = BigInt(float);
    } else if (node.kind === 'string' && json && /^-?\d+$/.test(node.value)) value = BigInt(node.value);
    if (value === undefined) return this.fail(node.pos, `field '${spec.name}' needs an integer, found ${describeValue(node)}`);
    const [min, max] = INT_RANGES[type];
    if (value < min || value > max) {
      const why = min === 0n && value < 0n ? `needs a non-negative integer, found ${value}` : `is ${type} and cannot hold ${value}`;
      this.fail(node.pos, `field '${spec.name}' ${why}`);
    }
    if (value > BigInt(Number.MAX_SAFE_INTEGER) || value < BigInt(Number.MIN_SAFE_INTEGER)) {
      this.fail(node.pos, `integer ${value} for field '${spec.name}' is beyond what Conveyor represents exactly (±${Number.MAX_SAFE_INTEGER})`);
    }
    return Number(value);
  }
}

/** A decoded message once its defaults are filled: the schema's type, `omit`ted fields as the source left them. */
export type Filled<M extends MessageType, O extends string = never> = Omit<MessageValue<M>, O> & Partial<Record<O, unknown>>;

/**
 * Sets every unset non-oneof scalar to its proto3 default, repeated fields to [] and maps to {},
 * recursively through set messages, in place (positions stay attached). Unset messages stay
 * unset. `omit` names top-level fields to leave alone.
 */
export function fillDefaults<M extends MessageType, const O extends string = never>(value: Decoded, type: M, omit: readonly O[] = []): Filled<M, O> {
  fillIn(value, type, omit);
  // The one place the schema's meaning is asserted: the decoder gave every field a value of its
  // declared type, and fillIn gave every always-present field one, which is what MessageValue says.
  return value as Filled<M, O>;
}

function fillIn(value: Decoded, type: MessageType, omit: readonly string[] = []): void {
  for (const spec of type.fields) {
    if (omit.includes(spec.name)) continue;
    const current = value[spec.name];
    const nested = typeof spec.type === 'object' && spec.type.kind === 'message' ? spec.type : undefined;
    if (current === undefined) {
      if (spec.label === 'repeated') value[spec.name] = [];
      else if (spec.label === 'map') value[spec.name] = {};
      else if (!spec.oneof && !nested) value[spec.name] = defaultValue(spec.type as ScalarType | EnumType);
      continue;
    }
    if (!nested) continue;
    if (spec.label === 'single') fillIn(current as Decoded, nested);
    else if (spec.label === 'repeated') for (const item of current as Decoded[]) fillIn(item, nested);
    else for (const item of Object.values(current as Record<string, Decoded>)) fillIn(item, nested);
  }
}
