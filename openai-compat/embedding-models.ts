// Which served models answer /v1/embeddings, and their tokenizers. An embedding model is a
// classic (dynamically batched) encoder whose config has an `input_ids` input and a
// `sentence_embedding` output; its tokenizer (src/serving/encoder-tokenizer.ts) loads once per version.

import { join } from 'node:path';
import type { ModelConfig } from '../src/contracts/model-config.js';
import { invalidArg } from '../src/errors.js';
import type { ConveyorService } from '../src/serving/conveyor-service.js';
import { loadEncoderTokenizer, type EncoderTokenizer } from '../src/serving/encoder-tokenizer.js';
import { missingModel } from '../src/server/kit/errors.js';

export const EMBEDDING_OUTPUT = 'sentence_embedding';

export interface EmbeddingModel {
  readonly name: string;
  readonly version: string;
  readonly config: ModelConfig;
}

export const isEmbeddingModel = (config: ModelConfig): boolean => config.output.some((o) => o.name === EMBEDDING_OUTPUT) && config.input.some((i) => i.name === 'input_ids');

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
      if (isEmbeddingModel(config)) models.push({ name, version, config });
    }
    return models.sort((a, b) => a.name.localeCompare(b.name));
  }

  resolve(name: string): EmbeddingModel {
    const found = this.list().find((m) => m.name === name);
    if (found) return found;
    if (this.service.modelReady(name)) throw invalidArg(`model '${name}' is not an embedding model (it needs an input_ids input and a ${EMBEDDING_OUTPUT} output)`, 'model');
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
