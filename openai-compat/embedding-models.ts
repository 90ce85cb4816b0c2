// Which served models answer /v1/embeddings, and their tokenizers. An embedding model is a
// classic (dynamically batched) encoder whose config has an `input_ids` input and a
// `sentence_embedding` output; its tokenizer.json and tokenizer_config.json sit in the version
// directory, as a Hugging Face export lays them out. Tokenizers load once per version.

import { join } from 'node:path';
import type { ModelConfig } from '../src/contracts/model-config.js';
import { createTokenizer, MODEL_FILE_NAMES, readModelFiles, type TextTokenizer } from '../src/engine-client/input-processor-files.js';
import { confinedPath, type ConfinementRoot } from '../src/repository/confine.js';
import { ConveyorError, invalidArg } from '../src/errors.js';
import type { ConveyorService } from '../src/serving/conveyor-service.js';
import { missingModel } from './errors.js';

export const EMBEDDING_OUTPUT = 'sentence_embedding';

export interface EmbeddingModel {
  readonly name: string;
  readonly version: string;
  readonly config: ModelConfig;
}

export interface EncoderTokenizer {
  readonly tokenizer: TextTokenizer;
  /** Most tokens one input may have (position embeddings). */
  readonly maxLength: number;
  readonly vocabSize: number;
}

const isEmbeddingModel = (config: ModelConfig): boolean =>
  config.output.some((o) => o.name === EMBEDDING_OUTPUT) && config.input.some((i) => i.name === 'input_ids');

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

/** The tokenizer of an encoder's version directory, with its vocabulary size and length limit. */
export async function loadEncoderTokenizer(versionRoot: ConfinementRoot): Promise<EncoderTokenizer> {
  let files;
  try {
    // Fixed names, but a link among them must not lead out of the version directory.
    for (const name of MODEL_FILE_NAMES) await confinedPath(versionRoot, name, 'tokenizer file');
    files = await readModelFiles(versionRoot.dir);
  } catch (error) {
    throw new ConveyorError('UNAVAILABLE', `the embedding model's tokenizer is missing from ${versionRoot.display}: ${(error as Error).message}`);
  }
  const tokenizer = createTokenizer(files);
  let maxId = -1;
  for (const id of tokenizer.get_vocab(true).values()) maxId = Math.max(maxId, id);
  const positions = files.config?.max_position_embeddings;
  const fromTokenizer = files.tokenizerConfig.model_max_length;
  const maxLength = typeof positions === 'number' ? positions : typeof fromTokenizer === 'number' && fromTokenizer < 1e12 ? fromTokenizer : 512;
  return { tokenizer, maxLength, vocabSize: maxId + 1 };
}
