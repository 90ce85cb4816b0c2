// Worker entries are declared by source name; a compiled process loads their .js twins.
import { describe, expect, it } from 'vitest';
import { runnableEntry } from '../../../src/threads/spawn-worker.js';

const entry = new URL('file:///app/src/engine-worker/main.ts');

describe('runnableEntry', () => {
  it('keeps the .ts entry when this process runs the sources', () => {
    expect(runnableEntry(entry, 'file:///app/src/threads/spawn-worker.ts').href).toBe(entry.href);
  });
  it('loads the compiled .js twin when this process runs the build', () => {
    expect(runnableEntry(entry, 'file:///app/dist/src/threads/spawn-worker.js').href).toBe('file:///app/src/engine-worker/main.js');
  });
});
