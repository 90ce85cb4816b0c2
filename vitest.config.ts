import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // Builds the default model repository's weights once when they are missing.
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 180_000,
    // Two cores: ORT already uses both inside a test, so files run one or two at a time.
    maxWorkers: 2,
    reporters: ['default'],
    projects: [
      {
        extends: true,
        // Integration tests start servers, workers and child processes: each file in a fresh
        // module graph, so no server, registry or signal handler outlives its file. They are the
        // long files, and isolated projects run first, so the short unit files fill the tail.
        test: { name: 'integration', include: ['test/integration/**/*.test.ts'], isolate: true },
      },
      {
        extends: true,
        // Unit tests are pure functions and self-contained objects: they share one module graph
        // per worker, which saves re-importing the tokenizer, grammar engine and ORT for each of
        // ~150 files (a third of the unit run's wall time).
        test: { name: 'unit', include: ['test/unit/**/*.test.ts'], isolate: false },
      },
    ],
  },
});
