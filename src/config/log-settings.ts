// The log settings a client may read and change at run time (Triton's logging extension:
// GET/POST v2/logging, gRPC LogSettings). One declaration of the fields; the front ends turn a
// refused update into their own error shape, and the composition root applies the settings to
// the real logger (main.ts filters its lines, cli.ts's pino hooks filter by level and format).

/** Triton's log_format values: its default layout, or ISO 8601 timestamps. */
export const LOG_FORMATS = ['default', 'ISO8601'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

/** Every setting with the JSON kind of its value: Triton's names, in Triton's order. */
export const LOG_SETTING_KINDS = {
  log_file: 'string',
  log_info: 'boolean',
  log_warning: 'boolean',
  log_error: 'boolean',
  log_verbose_level: 'uint32',
  log_format: 'string',
} as const;

export type LogSettingName = keyof typeof LOG_SETTING_KINDS;

export interface LogSettingsValue {
  /** Always '' (the console): a path a client sends would let it write files where the server may. */
  readonly log_file: string;
  readonly log_info: boolean;
  readonly log_warning: boolean;
  readonly log_error: boolean;
  /** 0: no verbose lines; 1 and up: debug lines; 2 and up: trace lines too. */
  readonly log_verbose_level: number;
  readonly log_format: LogFormat;
}

export const DEFAULT_LOG_SETTINGS: LogSettingsValue = { log_file: '', log_info: true, log_warning: true, log_error: true, log_verbose_level: 0, log_format: 'default' };

/** The severity of a log line, in Triton's terms. */
export type LogSeverity = 'error' | 'warning' | 'info' | 'verbose';

export type LogSettingsUpdate = { readonly settings: LogSettingsValue } | { readonly error: string };

const isSettingName = (key: string): key is LogSettingName => Object.hasOwn(LOG_SETTING_KINDS, key);

/**
 * The settings after `update` (a record of setting name → value), or the first reason to refuse
 * it; a refused update changes nothing. Pure.
 */
export function updatedLogSettings(current: LogSettingsValue, update: Readonly<Record<string, unknown>>): LogSettingsUpdate {
  const next: { -readonly [K in LogSettingName]: LogSettingsValue[K] } = { ...current };
  for (const [key, value] of Object.entries(update)) {
    if (!isSettingName(key)) return { error: `unknown log setting '${key}' (settings: ${Object.keys(LOG_SETTING_KINDS).join(', ')})` };
    switch (key) {
      case 'log_info':
      case 'log_warning':
      case 'log_error':
        if (typeof value !== 'boolean') return { error: `log setting '${key}' must be a boolean` };
        next[key] = value;
        break;
      case 'log_verbose_level':
        if (!isUint32(value)) return { error: `log setting '${key}' must be an integer from 0 to 4294967295` };
        next.log_verbose_level = value;
        break;
      case 'log_format':
        if (!isLogFormat(value)) return { error: `log setting 'log_format' must be one of ${LOG_FORMATS.join(', ')}` };
        next.log_format = value;
        break;
      case 'log_file':
        if (typeof value !== 'string') return { error: "log setting 'log_file' must be a string" };
        if (value !== '') return { error: "log setting 'log_file' cannot be changed at run time: this server logs to the console (stdout) only" };
        next.log_file = value;
        break;
    }
  }
  return { settings: next };
}

const isUint32 = (value: unknown): value is number => typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= 0xffffffff;
const isLogFormat = (value: unknown): value is LogFormat => (LOG_FORMATS as readonly unknown[]).includes(value);

/** Whether a line of `severity` is written under `settings`; verbose lines carry their level (1 = debug, 2 = trace). */
export function logAllows(settings: LogSettingsValue, severity: LogSeverity, verboseLevel = 1): boolean {
  switch (severity) {
    case 'error':
      return settings.log_error;
    case 'warning':
      return settings.log_warning;
    case 'info':
      return settings.log_info;
    case 'verbose':
      return settings.log_verbose_level >= verboseLevel;
  }
}

/** The server's live log settings: read by every log line, changed by the logging endpoints. */
export class LogSettings {
  private current: LogSettingsValue;
  private readonly listeners: ((settings: LogSettingsValue) => void)[] = [];

  constructor(initial: Partial<LogSettingsValue> = {}) {
    this.current = { ...DEFAULT_LOG_SETTINGS, ...initial };
  }

  get value(): LogSettingsValue {
    return this.current;
  }

  /** Applies the update whole, or returns why it was refused (nothing changed then). */
  update(update: Readonly<Record<string, unknown>>): string | undefined {
    const result = updatedLogSettings(this.current, update);
    if ('error' in result) return result.error;
    this.current = result.settings;
    for (const listener of this.listeners) listener(this.current);
    return undefined;
  }

  allows(severity: LogSeverity, verboseLevel = 1): boolean {
    return logAllows(this.current, severity, verboseLevel);
  }

  /** Called after every accepted update (the logger re-reads its level there). */
  onChange(listener: (settings: LogSettingsValue) => void): void {
    this.listeners.push(listener);
  }
}

/** The settings a `--log-level` threshold starts with: every severity at or above it on. */
export function logSettingsForLevel(level: 'debug' | 'info' | 'warn' | 'error'): Partial<LogSettingsValue> {
  const rank = { debug: 0, info: 1, warn: 2, error: 3 }[level];
  return { log_verbose_level: rank === 0 ? 1 : 0, log_info: rank <= 1, log_warning: rank <= 2, log_error: true };
}

/** The lowest threshold a level-filtering logger needs so that every line the settings allow reaches it. */
export function thresholdFor(settings: LogSettingsValue): 'trace' | 'debug' | 'info' {
  return settings.log_verbose_level >= 2 ? 'trace' : settings.log_verbose_level >= 1 ? 'debug' : 'info';
}

/** A pino-style numeric level (10 trace … 60 fatal) as a severity and, for verbose lines, their level. */
export function severityOfLevel(level: number): { readonly severity: LogSeverity; readonly verboseLevel: number } {
  if (level >= 50) return { severity: 'error', verboseLevel: 0 };
  if (level >= 40) return { severity: 'warning', verboseLevel: 0 };
  if (level >= 30) return { severity: 'info', verboseLevel: 0 };
  return { severity: 'verbose', verboseLevel: level >= 20 ? 1 : 2 };
}
