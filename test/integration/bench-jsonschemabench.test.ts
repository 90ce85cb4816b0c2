// Smoke test of `npm run bench -- jsonschemabench --quick` on a MaskBench-format directory made
// here (JSONSchemaBench's data is never committed): the real CLI compiles each schema on the
// grammar engine with the server's compile probe and matches every test instance token by token.
// A schema the grammar refuses counts against coverage; valid instances are accepted, invalid
// ones rejected, and one using a property its schema does not name (additionalProperties absent:
// strict mode does not generate it) is counted as not expressible rather than as a failure, and
// one labelled valid that ajv finds invalid as a disputed label. With
// --property-order both, each split runs twice: an instance listing keys out of the schema's order
// is rejected in the schema's order and accepted in any order.

import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { afterAll, expect, it } from 'vitest';
import type { BenchReport } from '../../bench/harness/types.js';

const run = promisify(execFile);
const data = mkdtempSync(join(tmpdir(), 'maskbench-data-'));
const out = mkdtempSync(join(tmpdir(), 'bench-jsonschemabench-'));
afterAll(() => {
  rmSync(data, { recursive: true, force: true });
  rmSync(out, { recursive: true, force: true });
});

const write = (name: string, schema: unknown, tests: { valid: boolean; data: unknown }[]): void =>
  writeFileSync(join(data, `${name}.json`), JSON.stringify({ description: '', meta: {}, schema, tests }));

it('reports coverage, correctness, compile and mask times per split', { timeout: 120_000 }, async () => {
  write('Split_a---score', { type: 'object', properties: { score: { type: 'number', minimum: 0, maximum: 1 }, label: { type: 'string', maxLength: 4 } }, required: ['score'] }, [
    { valid: true, data: { score: 0.5, label: 'ok' } },
    { valid: true, data: { score: 1 } },
    { valid: true, data: { score: 0, extra: true } },
    { valid: false, data: { score: 1.5 } },
    { valid: false, data: { label: 'ok' } },
    { valid: false, data: { score: 0.5, label: 'toolong' } },
  ]);
  write('Split_a---not', { type: 'string', not: { pattern: '^a', minLength: 2 } }, [{ valid: true, data: 'b' }]);
  write('Split_b---city', { enum: ['Zürich', '東京'] }, [
    { valid: true, data: '東京' },
    // A wrong label (MaskBench has a few): ajv finds it invalid, so its rejection is counted apart.
    { valid: true, data: 'Paris' },
    { valid: false, data: 'Zurich' },
  ]);
  write('Split_b---pair', { type: 'object', properties: { a: { type: 'integer' }, b: { type: 'integer' } }, required: ['a', 'b'], additionalProperties: false }, [
    { valid: true, data: { b: 1, a: 2 } },
    { valid: false, data: { b: 1, a: 2, b2: 3 } },
  ]);
  const args = ['--import', 'tsx', 'bench/cli.ts', 'jsonschemabench', '--quick', '--data', data, '--splits', 'Split_a,Split_b', '--property-order', 'both', '--out', out];
  await run(process.execPath, args, { cwd: process.cwd(), maxBuffer: 16 * 2 ** 20 });
  const report = JSON.parse(readFileSync(join(out, 'results.json'), 'utf8')) as BenchReport;
  const metrics = (split: string, order = 'schema') => report.cases.find((c) => c.point === split && c.params['propertyOrder'] === order)!.metrics as Record<string, unknown>;
  expect(metrics('Split_a')).toMatchObject({
    schemas: 2,
    compiled: 1,
    refusals: { not: 1 },
    valid: { total: 3, accepted: 2, notExpressible: 1, rejected: 0 },
    invalid: { total: 3, rejected: 3, accepted: 0 },
  });
  expect(metrics('Split_a', 'any')).toMatchObject({ compiled: 1, valid: { accepted: 2, notExpressible: 1, rejected: 0 }, invalid: { rejected: 3, accepted: 0 } });
  // The pair's valid instance lists its keys out of the schema's order.
  expect(metrics('Split_b')).toMatchObject({ schemas: 2, compiled: 2, valid: { accepted: 1, disputed: 1, rejected: 1 }, invalid: { rejected: 2, accepted: 0 } });
  expect(metrics('Split_b', 'any')).toMatchObject({ schemas: 2, compiled: 2, valid: { accepted: 2, disputed: 1, rejected: 0 }, invalid: { rejected: 2, accepted: 0 } });
  const summary = readFileSync(join(out, 'summary.md'), 'utf8');
  expect(summary).toMatch(/\| Split_a \| schema \| 2 \| 50% \(1\) \|/);
  expect(summary).toMatch(/\| Split_b \| any \| 2 \| 100% \(2\) \|/);
  expect(summary).toMatch(/Split_b\/pair: valid instance rejected: \{"b": 1, "a": 2\}/);
  expect(summary.match(/valid instance rejected/g)).toHaveLength(1);
  expect(summary).toMatch(/Split_b\/city: valid by its label, invalid by ajv, rejected: "Paris"/);
  expect(summary).toMatch(/\| Split_b \| any \| 2 \| 100% \(2\) \| — \| 100% \(2\/2\) \| 0 \| 1 \|/);
});
