// Triton's ModelConfig as plain data with proto field names in snake_case, so the config endpoint
// and the gRPC ModelConfig RPC print it as Triton does. Every type here is read off the one
// declaration in model-config-schema.ts; none is written by hand.
import type { MessageValue } from './proto-schema.js';
import type { MODEL_CONFIG, UNSUPPORTED_FIELDS } from './model-config-schema.js';

/** Every field of model_config.proto's ModelConfig, as the decoder returns it (proto3 defaults filled). */
export type ModelConfigMessage = MessageValue<typeof MODEL_CONFIG>;

/** Fields Conveyor parses only to refuse; a served config never holds them. */
export type UnsupportedField = (typeof UNSUPPORTED_FIELDS)[number];

/** A config as written (defaults filled, unsupported fields refused), before normalization. */
export type ParsedModelConfig = Omit<ModelConfigMessage, UnsupportedField>;

/** A served config: normalization always sets a version policy and a transaction policy. */
export type ModelConfig = ParsedModelConfig & Required<Pick<ModelConfigMessage, 'version_policy' | 'model_transaction_policy'>>;

export type ModelInput = ModelConfig['input'][number];
export type ModelOutput = ModelConfig['output'][number];
/** Inputs and outputs share name, data_type, dims, reshape; `format`/`optional` are input-only, `label_filename` output-only. */
export type ModelTensorConfig = ModelInput | ModelOutput;
export type ConfigDataType = ModelTensorConfig['data_type'];
export type VersionPolicy = ModelConfig['version_policy'];
export type InstanceGroupConfig = ModelConfig['instance_group'][number];
export type DynamicBatchingConfig = NonNullable<ModelConfig['dynamic_batching']>;
export type QueuePolicy = NonNullable<DynamicBatchingConfig['default_queue_policy']>;
export type ModelOptimizationPolicy = NonNullable<ModelConfig['optimization']>;
export type ModelWarmup = ModelConfig['model_warmup'][number];
