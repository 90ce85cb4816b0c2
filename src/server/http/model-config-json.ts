// The config endpoint's body: the ModelConfig as Triton prints it (snake_case, defaults filled,
// enum names, 64-bit integers as JSON numbers). Kept behind this one function so the route does
// not change when the repository's printer (src/repository/config/) takes over.

import type { ModelConfig } from '../../contracts/model-config.js';

export function modelConfigJson(config: ModelConfig): unknown {
  // ModelConfig is already plain data with proto field names; until the repository printer
  // lands, it is printed as held.
  return config;
}
