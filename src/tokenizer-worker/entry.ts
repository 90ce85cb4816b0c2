// Where the tokenizer worker thread starts, and the messages it speaks: imported (not spelled as
// a URL at the call site) so the main thread's link to the worker is an import the import graph
// and layering rules see. The main thread imports this file only, never the worker's code.

import type { ModelFiles } from '../tokenizer/model-files.js';

export const TOKENIZER_WORKER_ENTRY = new URL('./main.ts', import.meta.url);

export interface TokenizeJob {
  readonly id: number;
  readonly text: string;
  readonly addSpecialTokens: boolean;
}

export type TokenizeResult = { readonly id: number; readonly ids: number[] } | { readonly id: number; readonly error: string };

export interface TokenizerWorkerData {
  readonly files: Pick<ModelFiles, 'tokenizerJson' | 'tokenizerConfig'>;
}
