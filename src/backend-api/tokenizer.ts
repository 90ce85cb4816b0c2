// A Hugging Face tokenizer for a TypeScript model (a pipeline's tokenizer step): the server's own
// encoder tokenizer, built from tokenizer.json / tokenizer_config.json (and config.json's
// max_position_embeddings) in a directory the model names, usually its version directory.
// Loaded on first use, so a model that never tokenizes never loads the tokenizer package.

import type { EncoderTokenizer } from '../tokenizer/encoder-tokenizer.js';

export type { EncoderTokenizer };

/** The tokenizer in `dir`, with its vocabulary size and the longest input (`maxLength`, in tokens). */
export async function loadTokenizer(dir: string): Promise<EncoderTokenizer> {
  const [{ readModelFiles }, { encoderTokenizerOf }] = await Promise.all([import('../tokenizer/model-files.js'), import('../tokenizer/encoder-tokenizer.js')]);
  return encoderTokenizerOf(await readModelFiles(dir));
}
