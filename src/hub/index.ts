// Models by name from the Hugging Face Hub, through the shared cache: the seam the CLI and the
// model repository use (only src/hub/client.ts imports @huggingface/hub).

export { HubError, type HubFailure } from './errors.js';
export { DEFAULT_REVISION, formatHubId, parseHubId, type HubModelId } from './hub-id.js';
export { hubSettings, pullModel, type HubSettings, type PulledModel, type PullReport } from './pull.js';
export { CONVERT_PRECISIONS, MODEL_METADATA_FILES, servingWants, type ConvertPrecision, type ServingWants } from './select.js';
export { convertedDir, servableModel, type Converter, type ServableModel } from './servable.js';
