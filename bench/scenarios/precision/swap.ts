// The live swap under traffic: `<family>-swap` is reloaded with a config override naming each
// variant in turn and back to fp32, while lanes of requests run back to back. Each swap is timed
// from the load call to its answer (the new variant READY, the old one closing); the requests
// that overlapped a swap are compared with the same lanes' requests before the first one.

import type { WeightPrecision } from '../../../kernels/linear.js';
import { percentile } from '../../harness/stats.js';
import { SWAP, servedName, type FamilyModels } from './repository.js';
import { request, type RequestShape } from './requests.js';

const LANES = 4;
/** Requests per lane before the first swap: the latency baseline. */
const BASELINE_PER_LANE = 4;

interface Timed {
  readonly startMs: number;
  readonly endMs: number;
  readonly ok: boolean;
}

async function swapTo(http: string, model: string, precision: string): Promise<number> {
  const config = (await (await fetch(`${http}/v2/models/${model}/config`)).json()) as { parameters: Record<string, { string_value: string }> };
  config.parameters['precision'] = { string_value: precision };
  const started = performance.now();
  const response = await fetch(`${http}/v2/repository/models/${model}/load`, { method: 'POST', body: JSON.stringify({ parameters: { config: JSON.stringify(config) } }) });
  if (!response.ok) throw new Error(`swap of ${model} to ${precision}: ${response.status} ${await response.text()}`);
  return performance.now() - started;
}

const ms = (values: readonly number[], p: number): string =>
  values.length === 0
    ? 'n/a'
    : percentile(
        [...values].sort((a, b) => a - b),
        p,
      ).toFixed(1);

async function swapFamily(http: string, family: FamilyModels['family'], shape: RequestShape, order: readonly WeightPrecision[]): Promise<{ rows: string[]; failed: number }> {
  const model = servedName(family, SWAP);
  const done: Timed[] = [];
  let running = true;
  let baselineLeft = LANES * BASELINE_PER_LANE;
  let baselineReached!: () => void;
  const baseline = new Promise<void>((resolve) => (baselineReached = resolve));
  const lane = async (id: number): Promise<void> => {
    for (let i = 0; running; i++) {
      const startMs = performance.now();
      const ok = await request(http, family, model, shape, id * 1000 + i).then(
        () => true,
        () => false,
      );
      done.push({ startMs, endMs: performance.now(), ok });
      if (--baselineLeft === 0) baselineReached();
    }
  };
  const lanes = Array.from({ length: LANES }, (_, id) => lane(id));
  await baseline;
  const windows: { precision: WeightPrecision; startMs: number; endMs: number }[] = [];
  try {
    for (const precision of order) {
      const startMs = performance.now();
      await swapTo(http, model, precision);
      windows.push({ precision, startMs, endMs: performance.now() });
    }
  } finally {
    running = false;
    await Promise.all(lanes);
  }
  const firstSwap = windows[0]!.startMs;
  const before = done.filter((r) => r.endMs <= firstSwap && r.ok).map((r) => r.endMs - r.startMs);
  const rows = windows.map((w, i) => {
    const during = done.filter((r) => r.ok && r.startMs < w.endMs && r.endMs > w.startMs).map((r) => r.endMs - r.startMs);
    const from = i === 0 ? 'fp32' : windows[i - 1]!.precision;
    return `| ${family} | ${from} → ${w.precision} | ${(w.endMs - w.startMs).toFixed(0)} | ${during.length} | ${ms(during, 50)} / ${ms(during, 99)} | ${ms(before, 50)} / ${ms(before, 99)} |`;
  });
  return { rows, failed: done.filter((r) => !r.ok).length };
}

export async function measureSwaps(http: string, families: readonly Pick<FamilyModels, 'family' | 'precisions'>[], shape: RequestShape): Promise<{ table: string[]; notes: string[] }> {
  const table = ['| model | swap | swap ms | requests during | their latency p50 / p99 ms | before any swap p50 / p99 ms |', '|---|---|---|---|---|---|'];
  let failed = 0;
  for (const { family, precisions } of families) {
    // Through every other variant the family has and back to fp32, where the swap model started.
    const order: WeightPrecision[] = [...precisions.filter((p) => p !== 'fp32'), 'fp32'];
    const result = await swapFamily(http, family, shape, order);
    table.push(...result.rows);
    failed += result.failed;
  }
  return {
    table,
    notes: [
      `swaps: ${LANES} lanes of back-to-back requests on each family's swap model; a swap is the load call with a config override (the new variant loads beside the old, which serves until it is READY); ${failed} request(s) failed during the swaps`,
    ],
  };
}
