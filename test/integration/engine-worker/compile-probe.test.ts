// The compile probe thread (src/grammar-worker/compile-probe.ts) on the tiny model's Qwen3
// vocabulary: a grammar it refuses is refused with xgrammar's own reason, and the next grammar is
// compiled on a fresh probe thread — xgrammar refuses by aborting its WASM instance, and one probe
// left full after an abort refused every compile after it (a JSONSchemaBench run of ~1,900 schemas).
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { CompileProbe } from '../../../src/grammar-worker/compile-probe.js';
import { DEFAULT_REPOSITORY } from '../../../models/default-repository.js';

const probe = new CompileProbe({ tokenizerPath: join(DEFAULT_REPOSITORY, 'qwen3-tiny', '1', 'tokenizer.json'), vocabSize: 151_936 }, 60_000);
afterAll(() => probe.close());

/** The probe's current thread (private: which thread compiles is the point here). */
const thread = (): number | undefined => (probe as unknown as { probe?: { worker: { threadId: number } } }).probe?.worker.threadId;

it('a grammar the probe refuses names xgrammar’s reason, and the next one compiles on a fresh probe thread', async () => {
  await probe.check('root ::= "ok"', 'grammar');
  const first = thread();
  expect(first).toBeDefined();
  // Two grammars it compiles share the thread.
  await probe.check('root ::= "yes" | "no"', 'grammar');
  expect(thread()).toBe(first);
  // A lookahead where an element must be: xgrammar's parser aborts.
  await expect(probe.check('root ::= (=[a]) "b"', 'grammar')).rejects.toThrow(/the grammar cannot be compiled: .*Expect element/);
  expect(thread()).toBeUndefined();
  await probe.check('root ::= "ok"', 'grammar');
  expect(thread()).toBeDefined();
  expect(thread()).not.toBe(first);
}, 120_000);
