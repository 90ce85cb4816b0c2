// How ONNX Runtime's intra-op threads wait between parallel sections, per model (config.pbtxt
// parameter `intra_op_allow_spinning`, "true" or "false"; absent: ORT's default, spinning). A
// spinning thread answers the next section sooner but burns its core meanwhile. Measured on the
// 2-core machine (bench/results/2026-12-02-intra-op-spinning): with spinning off, 32 streams cost
// 25–30% less process CPU per token at equal or better throughput, one stream decodes 4–10% slower.

import type { ModelConfig } from '../contracts/model-config.js';
import { invalidArg } from '../errors.js';

export const INTRA_OP_SPINNING_PARAMETER = 'intra_op_allow_spinning';

/** The model's choice, or undefined for ORT's default; anything but "true" / "false" is refused. */
export function intraOpSpinningOf(config: ModelConfig): boolean | undefined {
  const raw = config.parameters[INTRA_OP_SPINNING_PARAMETER]?.string_value;
  if (raw === undefined) return undefined;
  if (raw === 'true' || raw === 'false') return raw === 'true';
  throw invalidArg(`parameter ${INTRA_OP_SPINNING_PARAMETER} must be true or false, got '${raw}'`);
}
