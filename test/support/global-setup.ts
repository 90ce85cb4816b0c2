// Builds the default repository's tiny models once, before any test file runs, so test files
// running in parallel never race to write the same weights.
import { ensureDefaultRepository } from '../../models/default-repository.js';

export default async function setup(): Promise<void> {
  await ensureDefaultRepository();
}
