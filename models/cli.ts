// `npm run models [-- --size tiny|bench|all] [--family qwen3|bert|resnet]`
// Without flags: builds the default repository's weights (tiny models) where missing or stale.

import { parseArgs } from 'node:util';
import { ensureBuilt, type ModelFamily } from './catalog.js';
import type { ModelSize } from './common/model-files.js';
import { ensureDefaultRepository } from './default-repository.js';

const FAMILIES: readonly ModelFamily[] = ['qwen3', 'bert', 'resnet'];

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { size: { type: 'string' }, family: { type: 'string', multiple: true }, help: { type: 'boolean' } },
  });
  if (values.help) {
    console.log('npm run models [-- --size tiny|bench|all] [--family qwen3|bert|resnet]…');
    console.log('No flags: build the default repository (models/repository) where weights are missing.');
    return;
  }
  if (!values.size && !values.family) {
    await ensureDefaultRepository();
    return;
  }
  const sizes: ModelSize[] = values.size === 'all' ? ['tiny', 'bench'] : [(values.size ?? 'tiny') as ModelSize];
  const families = (values.family ?? FAMILIES) as ModelFamily[];
  for (const family of families) {
    if (!FAMILIES.includes(family)) throw new Error(`unknown family ${family}; expected one of ${FAMILIES.join(', ')}`);
    for (const size of sizes) {
      if (size !== 'tiny' && size !== 'bench') throw new Error(`unknown size ${String(size)}; expected tiny, bench or all`);
      const built = await ensureBuilt(family, size);
      console.log(`${family}-${size}: ${built.dir}`);
    }
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
});
