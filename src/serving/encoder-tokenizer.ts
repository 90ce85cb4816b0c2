// An encoder's tokenizer for /v1/embeddings: tokenizer.json and tokenizer_config.json sit in the
// version directory, as a Hugging Face export lays them out; a link among them must not lead out
// of it. What is built from them is src/tokenizer/encoder-tokenizer.ts.

import { ConveyorError } from '../errors.js';
import { confinedPath, type ConfinementRoot } from '../repository/confine.js';
import { encoderTokenizerOf, type EncoderTokenizer } from '../tokenizer/encoder-tokenizer.js';
import { MODEL_FILE_NAMES, readModelFiles } from '../tokenizer/model-files.js';

export type { EncoderTokenizer };

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
  return encoderTokenizerOf(files);
}
