// Where the engine worker thread starts. The main thread spawns it by URL, which no import graph
// follows; importing this constant instead makes the link from the engine client to the worker an
// ordinary import that tools and the layering rules see.
export const ENGINE_WORKER_ENTRY = new URL('./main.ts', import.meta.url);
