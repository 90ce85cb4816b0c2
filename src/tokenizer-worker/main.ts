// A worker thread that owns a second copy of a model's tokenizer and encodes large texts, so a
// long prompt is tokenized while the main thread keeps serving (byte-level BPE runs about a
// microsecond per character: a megabyte would otherwise freeze every socket for a second).

import { parentPort, workerData } from 'node:worker_threads';
import { createTokenizer } from '../tokenizer/model-files.js';
import type { TokenizeJob, TokenizeResult, TokenizerWorkerData } from './entry.js';

const port = parentPort!;
const tokenizer = createTokenizer((workerData as TokenizerWorkerData).files);
port.on('message', (job: TokenizeJob) => {
  let result: TokenizeResult;
  try {
    result = { id: job.id, ids: tokenizer.encode(job.text, { add_special_tokens: job.addSpecialTokens }).ids };
  } catch (error) {
    result = { id: job.id, error: error instanceof Error ? error.message : String(error) };
  }
  port.postMessage(result);
});
