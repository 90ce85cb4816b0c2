// Smoke test of `npm run bench -- streaming --quick`: the real CLI starts the real server (child
// process) on the tiny decoder, and every transport runs its concurrent chats, into a temporary
// folder. It proves the scenario end to end (server up, all four transports delivering the asked
// tokens with the same greedy text, CPU, health and /metrics scrapes sampled, files written), not the numbers.

import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import type { BenchReport } from '../../bench/harness/types.js';
import { checkWellFormed } from '../unit/bench/xml.js';

const run = promisify(execFile);
const out = mkdtempSync(join(tmpdir(), 'bench-streaming-smoke-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

// --quick: the tiny decoder, 8 concurrent chats of 8 tokens, 2 measured runs per transport.
const CONCURRENCY = 8;
const TOKENS = 8;
const TRANSPORTS = ['non-streaming', 'sse', 'websocket', 'grpc'];

describe('npm run bench -- streaming --quick', () => {
  it('measures every transport and writes results.json, summary.md and the charts', async () => {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'bench/cli.ts', 'streaming', '--quick', '--out', out], { cwd: process.cwd(), maxBuffer: 16 * 2 ** 20 });
    const report = JSON.parse(readFileSync(join(out, 'results.json'), 'utf8')) as BenchReport;
    expect(report.skipped).toEqual([]);
    expect(report.settings).toMatchObject({ quick: true, size: 'tiny', concurrency: CONCURRENCY, maxTokens: TOKENS });
    expect(report.cases.map((c) => c.variant)).toEqual(TRANSPORTS);
    for (const c of report.cases) {
      expect(c.samplesMs).toHaveLength(2);
      expect(c.throughput!.perSecond).toBeGreaterThan(0);
      const m = c.metrics!;
      expect(m['tokensPerRun']).toBe(CONCURRENCY * TOKENS);
      // Greedy: every transport returns the non-streaming text for every prompt.
      expect(m['textsMatchingBaseline']).toBe(`${CONCURRENCY}/${CONCURRENCY}`);
      // Streaming transports send a message per engine step (one token each, fewer if a slow reader lets them merge); non-streaming one body.
      if (c.variant === 'non-streaming') expect(m['messagesPerRequest']).toBe(1);
      else {
        expect(m['messagesPerRequest']).toBeGreaterThan(1);
        expect(m['messagesPerRequest']).toBeLessThanOrEqual(TOKENS);
      }
      expect(m['healthPolls']).toBeGreaterThan(0);
      expect(m['healthFailures']).toBe(0);
      expect(m['healthP50Ms']).toBeGreaterThan(0);
      // /metrics scraped on the HTTP port at the same time.
      expect(m['metricsPolls']).toBeGreaterThan(0);
      expect(m['metricsFailures']).toBe(0);
      expect(m['metricsP99Ms']).toBeGreaterThanOrEqual(m['metricsP50Ms'] as number);
      if (process.platform === 'linux') expect(m['mainCpuUsPerToken']).toBeGreaterThanOrEqual(0);
    }
    for (const file of ['streaming-throughput.svg', 'streaming-main-cpu.svg', 'streaming-health.svg', 'streaming-metrics.svg']) {
      const svg = readFileSync(join(out, file), 'utf8');
      checkWellFormed(svg);
      for (const transport of TRANSPORTS) expect(svg).toContain(`data-series="${transport}"`);
    }
    // The per-transport table is the last thing on stdout.
    const last = stdout.trimEnd().split('\n').at(-1)!;
    expect(last).toMatch(/^\| grpc \| /);
  }, 90_000);
});
