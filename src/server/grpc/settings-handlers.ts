// gRPC LogSettings and TraceSetting (Triton's logging and trace extensions): an empty settings
// map reads, a non-empty one changes and answers the settings now in effect. The settings are
// the same objects the HTTP routes use; a refused change is INVALID_ARGUMENT and changes nothing.
// TraceSetting: an empty value list clears a model's own value (Triton's rule).

import { LOG_SETTING_KINDS, type LogSettings, type LogSettingName } from '../../config/log-settings.js';
import { TRACE_STATUS, TRACE_STATUS_KEY, type TraceSettings } from '../../config/trace-settings.js';
import type { InferenceService } from '../../contracts/inference-service.js';
import { invalidArg } from '../../errors.js';
import { setOwnEntry } from '../../contracts/own-entry.js';

/** LogSettingsRequest.SettingValue as proto-loader gives it (oneofs: true names the member set). */
export interface WireLogSettingValue {
  readonly parameter_choice?: 'bool_param' | 'uint32_param' | 'string_param';
  readonly bool_param?: boolean;
  readonly uint32_param?: number;
  readonly string_param?: string;
}

export interface WireLogSettingsRequest {
  readonly settings: Readonly<Record<string, WireLogSettingValue>>;
}

export interface WireTraceSettingRequest {
  readonly settings: Readonly<Record<string, { readonly value: readonly string[] }>>;
  readonly model_name: string;
}

type WireLogSettingsResponse = { settings: Record<string, WireLogSettingValue> };
type WireTraceSettingResponse = { settings: Record<string, { value: readonly string[] }> };

export function logSettingsRpc(log: LogSettings, request: WireLogSettingsRequest): WireLogSettingsResponse {
  const update: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(request.settings ?? {})) {
    const choice = value.parameter_choice;
    if (choice === undefined) throw invalidArg(`log setting '${key}' has no value`);
    setOwnEntry(update, key, value[choice]);
  }
  const problem = log.update(update);
  if (problem !== undefined) throw invalidArg(problem);
  const settings: Record<string, WireLogSettingValue> = {};
  for (const [key, kind] of Object.entries(LOG_SETTING_KINDS)) {
    const current = log.value[key as LogSettingName];
    if (kind === 'boolean') settings[key] = { bool_param: Boolean(current) };
    else if (kind === 'uint32') settings[key] = { uint32_param: Number(current) };
    else settings[key] = { string_param: String(current) };
  }
  return { settings };
}

export function traceSettingRpc(trace: TraceSettings, service: InferenceService, request: WireTraceSettingRequest): WireTraceSettingResponse {
  const model = request.model_name === '' ? undefined : request.model_name;
  if (model !== undefined) service.modelConfig(model); // an unknown model is refused, as everywhere
  const update: Record<string, readonly string[] | null> = {};
  for (const [key, { value }] of Object.entries(request.settings ?? {})) setOwnEntry(update, key, value.length === 0 ? null : value);
  const result = Object.keys(update).length === 0 ? { settings: trace.get(model) } : trace.update(update, model);
  if ('error' in result) throw invalidArg(result.error);
  const settings: Record<string, { value: readonly string[] }> = {};
  for (const [key, value] of Object.entries(result.settings)) settings[key] = { value };
  settings[TRACE_STATUS_KEY] = { value: [TRACE_STATUS] };
  return { settings };
}
