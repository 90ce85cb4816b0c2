// Where a model instance worker thread starts. The instance pool (src/serving/instance-pool.ts)
// spawns it by this URL, so the link from the main thread to the worker is an import the layering
// rules see, and the main thread never imports the ONNX Runtime code the worker runs.
export const INSTANCE_WORKER_ENTRY = new URL('./main.ts', import.meta.url);
