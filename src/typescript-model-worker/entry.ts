// Where a TypeScript model's instance worker thread starts. The instances
// (src/serving/typescript-instances.ts) spawn it by this URL, so the link from the main thread
// to the worker is an import the layering rules see, and the main thread never loads a model file.
export const TYPESCRIPT_MODEL_WORKER_ENTRY = new URL('./main.ts', import.meta.url);
