import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Builds the default model repository's weights once when they are missing.
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 180_000,
    // Two cores: ORT already uses both inside a test, so files run one or two at a time.
    maxWorkers: 2,
    reporters: ['default'],
  },
});
