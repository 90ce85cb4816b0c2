// ModelConfig as Triton prints it for GET /v2/models/{m}/config: proto3 JSON with proto field
// names, every primitive field present (defaults included), repeated fields as [], maps as {},
// enums by name, 64-bit integers as JSON numbers, fields in .proto declaration order. Unset
// message fields are left out, as protobuf does.
import type { ModelConfig } from '../../contracts/model-config.js';
import { MODEL_CONFIG } from '../../contracts/model-config-schema.js';
import type { EnumType, FieldType, MessageType, ScalarType } from '../../contracts/proto-schema.js';
import { defaultValue } from './proto3.js';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export function modelConfigToJsonValue(config: ModelConfig): Record<string, Json> {
  const printed = printMessage(config, MODEL_CONFIG);
  // Our ModelConfig always holds a transaction policy; Triton prints one only when the config
  // set it, which in practice means decoupled models.
  if (!config.model_transaction_policy?.decoupled) delete printed.model_transaction_policy;
  return printed;
}

/** The response body of the config endpoint (compact, like Triton's). */
export function modelConfigToJson(config: ModelConfig): string {
  return JSON.stringify(modelConfigToJsonValue(config));
}

function printMessage(value: Readonly<Record<string, unknown>>, type: MessageType): Record<string, Json> {
  const out: Record<string, Json> = {};
  for (const spec of type.fields) {
    const current = value[spec.name];
    if (spec.label === 'repeated') {
      out[spec.name] = ((current ?? []) as unknown[]).map((item) => printValue(item, spec.type));
    } else if (spec.label === 'map') {
      const entries = Object.entries((current ?? {}) as Record<string, unknown>);
      out[spec.name] = Object.fromEntries(entries.map(([key, item]) => [key, printValue(item, spec.type)]));
    } else if (current !== undefined) {
      out[spec.name] = printValue(current, spec.type);
    } else if (!spec.oneof && !isMessage(spec.type)) {
      out[spec.name] = printValue(defaultValue(spec.type as ScalarType | EnumType), spec.type);
    }
  }
  return out;
}

const isMessage = (type: FieldType): type is MessageType => typeof type === 'object' && type.kind === 'message';

function printValue(value: unknown, type: FieldType): Json {
  if (isMessage(type)) return printMessage(value as Record<string, unknown>, type);
  if (typeof value === 'number' && !Number.isFinite(value)) {
    // proto3 JSON spells non-finite floats as strings.
    return Number.isNaN(value) ? 'NaN' : value > 0 ? 'Infinity' : '-Infinity';
  }
  return value as Json;
}
