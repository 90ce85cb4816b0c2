// An encoder's tokenizer (BERT-style embedding models) from its Hugging Face files, with the
// vocabulary size and the longest input the model's position embeddings allow. Built by the
// server for /v1/embeddings (src/serving/encoder-tokenizer.ts, which confines the files to the
// version directory) and by TypeScript models through conveyor/backend's loadTokenizer.

import type { TextTokenizer } from '../contracts/tokenizer.js';
import { createTokenizer, type ModelFiles } from './model-files.js';

export interface EncoderTokenizer {
  readonly tokenizer: TextTokenizer;
  /** Most tokens one input may have (position embeddings). */
  readonly maxLength: number;
  readonly vocabSize: number;
}

export function encoderTokenizerOf(files: ModelFiles): EncoderTokenizer {
  const tokenizer = createTokenizer(files);
  let maxId = -1;
  for (const id of tokenizer.get_vocab(true).values()) maxId = Math.max(maxId, id);
  const positions = files.config?.max_position_embeddings;
  const fromTokenizer = files.tokenizerConfig.model_max_length;
  const maxLength = typeof positions === 'number' ? positions : typeof fromTokenizer === 'number' && fromTokenizer < 1e12 ? fromTokenizer : 512;
  return { tokenizer, maxLength, vocabSize: maxId + 1 };
}
