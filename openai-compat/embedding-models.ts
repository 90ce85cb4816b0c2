// Which served models answer /v1/embeddings, and their tokenizers. An embedding model is either
// an encoder, a classic (dynamically batched) model whose config has an `input_ids` input and a
// `sentence_embedding` output, tokenized here (src/serving/encoder-tokenizer.ts, loaded once per
// version); or a text model, one that takes the texts themselves (one BYTES input) and returns
// one FP32 output, such as the default repository's text-embedder ensemble, which tokenizes
// inside. A text model may report each text's token count in an integer NUM_TOKENS output.

import { join } from 'node:path';
import { DATATYPES, dataTypeOfConfig } from '../src/contracts/datatypes.js';
import type { ModelConfig } from '../src/contracts/model-config.js';
import { invalidArg } from '../src/errors.js';
import type { ConveyorService } from '../src/serving/conveyor-service.js';
import { loadEncoderTokenizer, type EncoderTokenizer } from '../src/serving/encoder-tokenizer.js';
import { missingModel } from '../src/server/kit/errors.js';

export const EMBEDDING_OUTPUT = 'sentence_embedding';
/** A text model's optional output: each text's token count, for the response's usage. */
export const TOKEN_COUNT_OUTPUT = 'NUM_TOKENS';

/** How a text model is fed and read: its text input, its embedding output, its token count output if any. */
export interface TextTensors {
  readonly input: string;
  readonly embedding: string;
  readonly tokenCount: string | null;
}

export interface EmbeddingModel {
  readonly name: string;
  readonly version: string;
  readonly config: ModelConfig;
  /** null for an encoder (token ids in, `sentence_embedding` out). */
  readonly text: TextTensors | null;
}

const isEncoder = (config: ModelConfig): boolean => config.output.some((o) => o.name === EMBEDDING_OUTPUT) && config.input.some((i) => i.name === 'input_ids');

const isInteger = (type: string): boolean => {
  const datatype = dataTypeOfConfig(type);
  return datatype !== undefined && (DATATYPES[datatype].kind === 'int' || DATATYPES[datatype].kind === 'uint');
};

/** A text model's tensors: one BYTES input, one FP32 output (any other output an integer NUM_TOKENS); null otherwise. */
export function textTensors(config: ModelConfig): TextTensors | null {
  if (config.input.length !== 1 || config.input[0]!.data_type !== 'TYPE_STRING') return null;
  const floats = config.output.filter((o) => o.data_type === 'TYPE_FP32');
  const count = config.output.find((o) => o.name === TOKEN_COUNT_OUTPUT && isInteger(o.data_type));
  if (floats.length !== 1 || config.output.length !== 1 + (count ? 1 : 0)) return null;
  return { input: config.input[0]!.name, embedding: floats[0]!.name, tokenCount: count?.name ?? null };
}

export const isEmbeddingModel = (config: ModelConfig): boolean => isEncoder(config) || textTensors(config) !== null;

export class EmbeddingModels {
  private readonly tokenizers = new Map<string, Promise<EncoderTokenizer>>();

  constructor(
    private readonly service: ConveyorService,
    private readonly repository: string,
  ) {}

  /** Every READY embedding model at its highest READY version, by name. */
  list(): EmbeddingModel[] {
    const latest = new Map<string, string>();
    for (const { name, version } of this.service.modelStatistics()) {
      if (Number(version) > Number(latest.get(name) ?? 0)) latest.set(name, version);
    }
    const models: EmbeddingModel[] = [];
    for (const [name, version] of latest) {
      const config = this.service.modelConfig(name, version);
      if (isEmbeddingModel(config)) models.push({ name, version, config, text: isEncoder(config) ? null : textTensors(config) });
    }
    return models.sort((a, b) => a.name.localeCompare(b.name));
  }

  resolve(name: string): EmbeddingModel {
    const found = this.list().find((m) => m.name === name);
    if (found) return found;
    if (this.service.modelReady(name))
      throw invalidArg(`model '${name}' is not an embedding model (it needs an input_ids input and a ${EMBEDDING_OUTPUT} output, or one BYTES input and one FP32 output)`, 'model');
    throw missingModel(this.service, name);
  }

  tokenizer(model: EmbeddingModel): Promise<EncoderTokenizer> {
    const key = `${model.name}/${model.version}`;
    let loading = this.tokenizers.get(key);
    if (!loading) {
      loading = loadEncoderTokenizer({ dir: join(this.repository, model.name, model.version), display: key });
      // A failed load (files missing) is retried by the next request rather than cached.
      loading.catch(() => this.tokenizers.delete(key));
      this.tokenizers.set(key, loading);
    }
    return loading;
  }
}
