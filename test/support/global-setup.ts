// Builds the default repository's tiny models once, before any test file runs, so test files
// running in parallel never race to write the same weights.
import { ensureBuilt } from '../../models/catalog.js';
import { DEFAULT_MODELS, DEFAULT_REPOSITORY } from '../../models/default-repository.js';
import { join } from 'node:path';

export default async function setup(): Promise<void> {
  for (const { name, family } of DEFAULT_MODELS) {
    try {
      await ensureBuilt(family, 'tiny', { dir: join(DEFAULT_REPOSITORY, name, '1') });
    } catch (error) {
      // A family whose builder is missing fails its own tests with this message, not every test.
      process.stderr.write(`[global-setup] ${name}: ${(error as Error).message}\n`);
    }
  }
}
