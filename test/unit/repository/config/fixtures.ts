// Fully normalized config pieces, as the config layer returns them, for exact comparisons.
import type { ModelOptimizationPolicy } from '../../../../src/contracts/model-config.js';

export { group, input, output } from '../../../support/model-config.js';

export const DEFAULT_OPTIMIZATION: ModelOptimizationPolicy = {
  priority: 'PRIORITY_DEFAULT',
  input_pinned_memory: { enable: true },
  output_pinned_memory: { enable: true },
  gather_kernel_buffer_threshold: 0,
  eager_batching: false,
};

/** The fields every normalized config has that these tests do not vary. */
export const COMMON = {
  runtime: '',
  version_policy: { latest: { num_versions: 1 } },
  optimization: DEFAULT_OPTIMIZATION,
  cc_model_filenames: {},
  metric_tags: {},
  model_warmup: [],
  model_transaction_policy: { decoupled: false },
};
