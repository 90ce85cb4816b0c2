// RepositoryModelLoad / RepositoryModelUnload parameters → the InferenceService's arguments.
// Triton's load parameters: "config" (ModelConfig JSON, string_param) and "file:<version>/<path>"
// (file contents, bytes_param); unload takes "unload_dependents" (bool_param). Other keys are
// ignored, as Triton does; whether file overrides also need a config is the service's rule.

import type { LoadOverride } from '../../contracts/inference-service.js';
import { invalidArg } from '../../errors.js';
import type { WireRepositoryParameter } from './wire-types.js';

const FILE_PREFIX = 'file:';

export function loadOverrideFromWire(parameters: Record<string, WireRepositoryParameter> | undefined): LoadOverride | undefined {
  let config: string | undefined;
  // Entries, not assignments: `files['__proto__'] = …` would replace the table's prototype.
  const files: [string, Uint8Array][] = [];
  for (const [key, parameter] of Object.entries(parameters ?? {})) {
    if (key === 'config') {
      if (parameter.parameter_choice !== 'string_param') throw invalidArg(`load parameter 'config' must be a string_param holding the model configuration JSON`);
      config = parameter.string_param ?? '';
    } else if (key.startsWith(FILE_PREFIX)) {
      const path = key.slice(FILE_PREFIX.length);
      if (path === '') throw invalidArg(`load parameter '${key}' must name a file as 'file:<version>/<path>'`);
      if (parameter.parameter_choice !== 'bytes_param') throw invalidArg(`load parameter '${key}' must be a bytes_param holding the file contents`);
      const bytes = parameter.bytes_param ?? new Uint8Array(0);
      files.push([path, new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength)]);
    }
  }
  const hasFiles = files.length > 0;
  if (config === undefined && !hasFiles) return undefined;
  return { ...(config !== undefined ? { config } : {}), ...(hasFiles ? { files: Object.fromEntries(files) } : {}) };
}

export function unloadOptionsFromWire(parameters: Record<string, WireRepositoryParameter> | undefined): { unloadDependents?: boolean } {
  const parameter = parameters?.['unload_dependents'];
  if (parameter === undefined) return {};
  if (parameter.parameter_choice !== 'bool_param') throw invalidArg(`unload parameter 'unload_dependents' must be a bool_param`);
  return { unloadDependents: parameter.bool_param === true };
}
