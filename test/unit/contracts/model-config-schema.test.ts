// The ModelConfig declaration (src/contracts/model-config-schema.ts) against the wire schema
// (protos/model_config.proto, which the gRPC ModelConfig RPC serializes a served config with):
// fields under the same names with the same labels, map keys, oneofs, scalar types, enum values
// and message types, so neither can drift silently. Everything a served config can hold is on
// the wire exactly. The subtrees the declaration reads only to refuse (UNSUPPORTED_FIELDS) never
// reach the wire, and the proto carries them in part or not at all: there, every field the proto
// has must be declared alike, and the declaration may describe more. Field order is not compared:
// the declaration keeps Triton's declaration order (the order its JSON prints in), the proto here
// lists fields by number.
import { join } from 'node:path';
import protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';
import { MODEL_CONFIG, UNSUPPORTED_FIELDS } from '../../../src/contracts/model-config-schema.js';
import { messageType, repeated, single, type FieldSpec, type MessageType } from '../../../src/contracts/proto-schema.js';

const PROTO = join(import.meta.dirname, '..', '..', '..', 'protos', 'model_config.proto');
const root = new protobuf.Root().loadSync(PROTO, { keepCase: true }).resolveAll();
const PACKAGE = 'inference';

/** 'served': the field sets must be equal; 'refused': the proto's fields must be a subset. */
type Mode = 'served' | 'refused';

const refusedAtTop = (type: MessageType, field: string) => type === MODEL_CONFIG && (UNSUPPORTED_FIELDS as readonly string[]).includes(field);

/** Differences between a declared message (and every message under it) and the proto, one line each. */
function differences(type: MessageType, mode: Mode = 'served', seen = new Set<string>()): string[] {
  if (seen.has(`${mode} ${type.name}`)) return [];
  seen.add(`${mode} ${type.name}`);
  const proto = root.lookup(`${PACKAGE}.${type.name}`);
  if (!(proto instanceof protobuf.Type)) return [`${type.name}: no such message in model_config.proto`];
  const declared = new Set(type.fields.map((f) => f.name));
  const problems = proto.fieldsArray.filter((f) => !declared.has(f.name)).map((f) => `${type.name}.${f.name}: in the proto, not declared`);
  for (const spec of type.fields) {
    const field = proto.fields[spec.name];
    const fieldMode = mode === 'refused' || refusedAtTop(type, spec.name) ? 'refused' : 'served';
    if (field) problems.push(...fieldDifferences(`${type.name}.${spec.name}`, spec, field, fieldMode, seen));
    else if (fieldMode === 'served') problems.push(`${type.name}.${spec.name}: declared, not in the proto`);
  }
  return problems;
}

function fieldDifferences(where: string, spec: FieldSpec, field: protobuf.Field, mode: Mode, seen: Set<string>): string[] {
  const problems: string[] = [];
  const label = field instanceof protobuf.MapField ? 'map' : field.repeated ? 'repeated' : 'single';
  if (label !== spec.label) problems.push(`${where}: declared ${spec.label}, proto ${label}`);
  if (field instanceof protobuf.MapField && field.keyType !== spec.mapKey) problems.push(`${where}: map key ${spec.mapKey}, proto ${field.keyType}`);
  if (field.partOf?.name !== spec.oneof) problems.push(`${where}: oneof ${spec.oneof ?? 'none'}, proto ${field.partOf?.name ?? 'none'}`);
  const type = spec.type;
  const resolved = field.resolvedType;
  if (typeof type === 'string') {
    if (field.type !== type) problems.push(`${where}: declared ${type}, proto ${field.type}`);
  } else if (type.kind === 'enum') {
    if (!(resolved instanceof protobuf.Enum) || resolved.fullName !== `.${PACKAGE}.${type.name}`) return [...problems, `${where}: declared enum ${type.name}, proto ${field.type}`];
    const byNumber = Object.entries(resolved.values).sort(([, a], [, b]) => a - b);
    const dense = byNumber.every(([, n], i) => n === i);
    const names = byNumber.map(([name]) => name);
    if (!dense || names.join() !== type.values.join())
      problems.push(`${where}: enum ${type.name} values [${type.values.join(', ')}], proto [${names.join(', ')}]${dense ? '' : ' (not dense from 0)'}`);
  } else {
    if (!(resolved instanceof protobuf.Type) || resolved.fullName !== `.${PACKAGE}.${type.name}`) return [...problems, `${where}: declared message ${type.name}, proto ${field.type}`];
    problems.push(...differences(type, mode, seen));
  }
  return problems;
}

/** Messages reachable from `type` through fields, by qualified name without the package. */
function protoMessages(type: protobuf.Type, reached = new Set<string>()): Set<string> {
  const name = type.fullName.slice(`.${PACKAGE}.`.length);
  if (reached.has(name)) return reached;
  reached.add(name);
  for (const field of type.fieldsArray) if (field.resolvedType instanceof protobuf.Type) protoMessages(field.resolvedType, reached);
  return reached;
}

function declaredMessages(type: MessageType, reached = new Set<string>()): Set<string> {
  if (reached.has(type.name)) return reached;
  reached.add(type.name);
  for (const spec of type.fields) if (typeof spec.type === 'object' && spec.type.kind === 'message') declaredMessages(spec.type, reached);
  return reached;
}

describe('the ModelConfig declaration and protos/model_config.proto', () => {
  it('agree on every field, type, label, oneof and enum value', () => {
    expect(differences(MODEL_CONFIG)).toEqual([]);
  });

  it('the declaration describes every message the proto reaches from ModelConfig', () => {
    const declared = declaredMessages(MODEL_CONFIG);
    expect([...protoMessages(root.lookupType(`${PACKAGE}.ModelConfig`))].filter((name) => !declared.has(name))).toEqual([]);
  });

  it('reports a drifted declaration', () => {
    const drifted = messageType('ModelInput', [single('name', 'int32'), single('data_type', 'string'), repeated('dims', 'int32'), single('format', 'bool', 'choice'), single('shape', 'int64')]);
    expect(differences(drifted)).toEqual([
      ...['reshape', 'is_shape_tensor', 'allow_ragged_batch', 'optional', 'is_non_linear_format_io'].map((f) => `ModelInput.${f}: in the proto, not declared`),
      'ModelInput.name: declared int32, proto string',
      'ModelInput.data_type: declared string, proto DataType',
      'ModelInput.dims: declared int32, proto int64',
      'ModelInput.format: oneof choice, proto none',
      'ModelInput.format: declared bool, proto Format',
      'ModelInput.shape: declared, not in the proto',
    ]);
    expect(differences(messageType('ModelOutpt', []))).toEqual(['ModelOutpt: no such message in model_config.proto']);
  });

  it('reports a refused subtree only where the proto has a field the declaration lacks or differs on', () => {
    const ensemble = messageType('ModelEnsembling', [single('max_inflight_responses', 'uint32')]);
    expect(differences(ensemble, 'refused')).toEqual(['ModelEnsembling.step: in the proto, not declared', 'ModelEnsembling.max_inflight_requests: in the proto, not declared']);
    const sequence = messageType('ModelSequenceBatching', [single('max_sequence_idle_microseconds', 'uint64'), single('iterative_sequence', 'bool')]);
    expect(differences(sequence, 'refused')).toEqual([]);
  });
});
