// The settings a client may change while the server runs, shared by the HTTP and gRPC front ends
// (one object each, made by the composition root, so a change over one protocol shows on the other).

import { LogSettings, type LogSettingsValue } from './log-settings.js';
import { TraceSettings } from './trace-settings.js';

export interface RuntimeSettings {
  readonly log: LogSettings;
  readonly trace: TraceSettings;
}

export function createRuntimeSettings(log: Partial<LogSettingsValue> = {}): RuntimeSettings {
  return { log: new LogSettings(log), trace: new TraceSettings() };
}
