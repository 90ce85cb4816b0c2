// An encoder's tokenizer (BERT-style embedding models): tokenizer.json and tokenizer_config.json
// sit in the version directory, as a Hugging Face export lays them out, with the vocabulary size
// and the longest input the model's position embeddings allow.

import type { TextTokenizer } from '../contracts/tokenizer.js';
import { ConveyorError } from '../errors.js';
import { confinedPath, type ConfinementRoot } from '../repository/confine.js';
import { createTokenizer, MODEL_FILE_NAMES, readModelFiles } from '../tokenizer/model-files.js';

export interface EncoderTokenizer {
  readonly tokenizer: TextTokenizer;
  /** Most tokens one input may have (position embeddings). */
  readonly maxLength: number;
  readonly vocabSize: number;
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
