// Trace settings as Triton's trace extension carries them (GET/POST v2[/models/{m}]/trace/setting,
// gRPC TraceSetting): global settings, and per-model ones that override them. Conveyor accepts,
// checks, stores and returns them so Triton clients and tools that set them keep working, but it
// records no traces: every answer says so in TRACE_STATUS_KEY.

/** Triton's trace levels. */
export const TRACE_LEVELS = ['OFF', 'TIMESTAMPS', 'TENSORS'] as const;

/** Every setting: Triton's names. trace_level is a list of levels; the others are one value each, as text. */
export const TRACE_SETTING_NAMES = ['trace_file', 'trace_level', 'trace_rate', 'trace_count', 'log_frequency'] as const;
export type TraceSettingName = (typeof TRACE_SETTING_NAMES)[number];

/** Values as Triton answers them: every setting a list of strings on gRPC; on HTTP trace_level a list, the rest strings. */
export type TraceSettingsValue = Readonly<Record<TraceSettingName, readonly string[]>>;

/** Triton's defaults (tracing off, rate 1000, no count limit, logged at the end). */
export const DEFAULT_TRACE_SETTINGS: TraceSettingsValue = {
  trace_file: [''],
  trace_level: ['OFF'],
  trace_rate: ['1000'],
  trace_count: ['-1'],
  log_frequency: ['0'],
};

/** The extra key in every trace settings answer, stating what this server traces. */
export const TRACE_STATUS_KEY = 'traces_recorded';
export const TRACE_STATUS = 'none: Conveyor stores and returns these settings for Triton clients but records no traces, whatever trace_level says';

/** A requested change: a setting's new value(s), or null to drop a model's override (back to the global value). */
export type TraceSettingsUpdate = Readonly<Record<string, readonly string[] | null>>;

const isSettingName = (key: string): key is TraceSettingName => (TRACE_SETTING_NAMES as readonly string[]).includes(key);

/** The first reason to refuse `update`, if any. Pure; `forModel` allows null (clear the override). */
export function traceUpdateProblem(update: TraceSettingsUpdate, forModel: boolean): string | undefined {
  for (const [key, values] of Object.entries(update)) {
    if (!isSettingName(key)) return `unknown trace setting '${key}' (settings: ${TRACE_SETTING_NAMES.join(', ')})`;
    if (values === null) {
      if (!forModel) return `trace setting '${key}' cannot be cleared globally (null only drops a model's own value)`;
      continue;
    }
    const problem = valueProblem(key, values);
    if (problem !== undefined) return problem;
  }
  return undefined;
}

function valueProblem(key: TraceSettingName, values: readonly string[]): string | undefined {
  if (key === 'trace_level') {
    if (values.length === 0) return "trace setting 'trace_level' needs at least one level";
    const bad = values.find((v) => !(TRACE_LEVELS as readonly string[]).includes(v));
    if (bad !== undefined) return `trace setting 'trace_level' has '${bad}'; levels are ${TRACE_LEVELS.join(', ')}`;
    if (values.includes('OFF') && values.length > 1) return "trace setting 'trace_level' cannot combine OFF with other levels";
    return undefined;
  }
  if (values.length !== 1) return `trace setting '${key}' takes exactly one value`;
  const value = values[0]!;
  const least = key === 'trace_rate' ? 1 : key === 'trace_count' ? -1 : 0;
  if (key !== 'trace_file' && !(/^-?\d+$/.test(value) && Number(value) >= least && Number.isSafeInteger(Number(value)))) {
    return `trace setting '${key}' must be an integer >= ${least}, got '${value}'`;
  }
  return undefined;
}

/** The global settings and each model's overrides. */
export class TraceSettings {
  private global: TraceSettingsValue = DEFAULT_TRACE_SETTINGS;
  private readonly models = new Map<string, Partial<Record<TraceSettingName, readonly string[]>>>();

  /** The settings in effect: global ones, overlaid with the model's own when `model` is given. */
  get(model?: string): TraceSettingsValue {
    return model === undefined ? this.global : { ...this.global, ...this.models.get(model) };
  }

  /** Applies the update whole and returns the settings in effect, or returns why it was refused (nothing changed then). */
  update(update: TraceSettingsUpdate, model?: string): { readonly settings: TraceSettingsValue } | { readonly error: string } {
    const problem = traceUpdateProblem(update, model !== undefined);
    if (problem !== undefined) return { error: problem };
    if (model === undefined) {
      const global: Record<TraceSettingName, readonly string[]> = { ...this.global };
      for (const [key, values] of Object.entries(update)) if (isSettingName(key) && values !== null) global[key] = values;
      this.global = global;
    } else {
      const own = { ...this.models.get(model) };
      for (const [key, values] of Object.entries(update)) {
        if (!isSettingName(key)) continue;
        if (values === null) delete own[key];
        else own[key] = values;
      }
      this.models.set(model, own);
    }
    return { settings: this.get(model) };
  }
}
