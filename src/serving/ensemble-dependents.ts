// Triton's unload_dependents: unloading an ensemble with it also unloads the models its steps
// name, each unless another loaded ensemble still names it.

import { repositoryModelName } from '../contracts/model-names.js';
import type { ModelConfig } from '../contracts/model-config.js';

/** The models an ensemble's steps name, by repository name (none for any other model). */
export function composingModels(config: ModelConfig | undefined): string[] {
  return [...new Set((config?.ensemble_scheduling?.step ?? []).map((step) => repositoryModelName(step.model_name)))];
}

/** Whether one of the loaded models' configs (an ensemble) still names `model` in a step. */
export function stillComposed(model: string, loadedConfigs: Iterable<ModelConfig | undefined>): boolean {
  for (const config of loadedConfigs) if (composingModels(config).includes(model)) return true;
  return false;
}
