// Where the tokenizer worker thread starts: imported (not spelled as a URL at the call site) so the
// main thread's link to the worker is an import the import graph and layering rules see.
export const TOKENIZER_WORKER_ENTRY = new URL('./main.ts', import.meta.url);
