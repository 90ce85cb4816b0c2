// The compile bound (--structured-outputs-compile-timeout-secs) on the real grammar worker and its
// compile probe thread, with the tiny model's Qwen3 vocabulary: a grammar whose compile runs past
// the bound is refused with INVALID_ARG naming the bound, while a request already constrained
// keeps getting its masks; the refusal is cached, and the next new grammar compiles on a fresh
// probe. (A pattern of 160 wide character classes, one grammar state each that nearly every token
// may enter, takes tens of seconds to compile here; a long maxLength no longer does: the length
// guard counts it, src/grammar/string-guard.ts.)
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import type { GrammarSpec } from '../../../src/contracts/generate.js';
import { maskAllows } from '../../../src/contracts/token-mask.js';
import { GrammarWorkerClient } from '../../../src/engine-worker/grammar-client.js';
import { ConveyorError } from '../../../src/errors.js';
import { DEFAULT_REPOSITORY } from '../../../models/default-repository.js';

const TOKENIZER = join(DEFAULT_REPOSITORY, 'qwen3-tiny', '1', 'tokenizer.json');
const IM_END = 151_645;
const BOUND_SECS = 0.5;
const letters = 'abcdefghijklmnopqrstuvwxyz';
const SLOW: GrammarSpec = { kind: 'json_schema', schema: JSON.stringify({ type: 'string', pattern: `^${Array.from({ length: 160 }, (_, i) => `[^${letters[i % 26]}]`).join('')}$` }) };

const lost: string[] = [];
const client = new GrammarWorkerClient({ tokenizerPath: TOKENIZER, vocabSize: 151_936, compileTimeoutSecs: BOUND_SECS }, (reason) => lost.push(reason));
afterAll(() => client.close());

it('a compile past the bound is a 400 naming it; other requests keep their masks; the probe comes back', async () => {
  await client.open('running', { kind: 'choice', choices: ['yes', 'no'] }, [IM_END]);
  let slowSettled = false;
  const slow = client.open('slow', SLOW, [IM_END]).then(
    () => null,
    (error: unknown) => error,
  );
  void slow.finally(() => {
    slowSettled = true;
  });
  // While the slow grammar's probe runs, the running request's masks are answered.
  const during = await client.masks([{ requestId: 'running', rollBack: 0, accept: [] }]);
  expect(slowSettled).toBe(false);
  expect(during.masks[0]!.mask).not.toBeNull();

  const error = await slow;
  expect(error).toBeInstanceOf(ConveyorError);
  expect(error).toMatchObject({ code: 'INVALID_ARG' });
  expect((error as Error).message).toMatch(/JSON schema took longer than --structured-outputs-compile-timeout-secs \(0\.5 s\) to compile/);

  // The refusal is cached: the same schema again is refused without another probe.
  const started = performance.now();
  await expect(client.open('slow-again', SLOW, [IM_END])).rejects.toMatchObject({ code: 'INVALID_ARG' });
  expect(performance.now() - started).toBeLessThan(BOUND_SECS * 1000);

  // A new grammar compiles on a fresh probe, and the running request is untouched.
  await client.open('next', { kind: 'json_schema', schema: '{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}' }, [IM_END]);
  const after = await client.masks([
    { requestId: 'running', rollBack: 0, accept: [] },
    { requestId: 'next', rollBack: 0, accept: [] },
  ]);
  expect(after.masks.map((m) => m.mask !== null)).toEqual([true, true]);
  // '{' opens the object; a 'yes' token is no JSON start.
  expect(maskAllows(after.masks[1]!.mask!, 90)).toBe(true);
  expect(lost).toEqual([]);
}, 120_000);

it('a schema whose translation runs past the bound is refused naming it, and the worker goes on serving masks', async () => {
  await client.open('steady', { kind: 'choice', choices: ['yes', 'no'] }, [IM_END]);
  // 300 strings whose patterns' automata each run to the state limit (`[ab]*a[ab]{9}` needs 2^10
  // states): unbounded, their translation holds the worker for tens of seconds on this machine.
  const properties = Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`p${i}`, { type: 'string', maxLength: 100 + i, pattern: `^[ab]*a[ab]{${9 + (i % 3)}}c${i}$` }]));
  const started = performance.now();
  const refused = client.open('hostile', { kind: 'json_schema', schema: JSON.stringify({ type: 'object', properties }) }, [IM_END]).then(
    () => null,
    (error: unknown) => error,
  );
  const masks = await client.masks([{ requestId: 'steady', rollBack: 0, accept: [] }]);
  expect(masks.masks[0]!.mask).not.toBeNull();
  const error = await refused;
  expect(error).toMatchObject({ code: 'INVALID_ARG' });
  expect((error as Error).message).toMatch(/JSON schema took longer than --structured-outputs-compile-timeout-secs \(0\.5 s\) to compile/);
  // Struck by the translation's deadline (the probe's bound would come only after the whole translation).
  expect(performance.now() - started).toBeLessThan(8_000);
  expect(lost).toEqual([]);
}, 120_000);
