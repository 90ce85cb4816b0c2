// `npm run bench -- soak`: a bounded mixed load on loopback for a set duration, against the real
// server as a child process on the default repository's tiny models (explicit model control, so
// the LLM can be reloaded with another precision mid-run). Reports requests by outcome, engine
// restarts, KV blocks held once idle, resident memory and event-loop lag over time. Targets for a
// 10-minute run: no crash, no restart, no failed good request, no leaked block, memory flat.

import { copyFile, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_REPOSITORY, ensureDefaultRepository } from '../../../models/default-repository.js';
import { positiveInt } from '../../harness/args.js';
import type { FlagSpec, PreparedScenario, Scenario, ScenarioContext } from '../../harness/scenario.js';
import { caseId, type BenchCase } from '../../harness/types.js';
import { buildInputs, httpBinaryRequest, type ModelMetadata } from '../infer/payloads.js';
import { startServerProcess, type ServerProcess } from '../infer/server-process.js';
import { waitForModels } from '../serve/conveyor-server.js';
import {
  badRequests,
  cnnInfer,
  embeddings,
  garbageWebSocket,
  hangUps,
  largeJsonInfers,
  largeWebSocketFrames,
  precisionSwaps,
  stalledWebSocket,
  stopStringCompletions,
  streamingChat,
  type Actor,
  type ActorContext,
  type SoakTarget,
} from './actors.js';
import { resetLagWindow, startMonitor, sample, type Sample } from './monitor.js';
import { soakCharts, soakMetrics, soakResults, type SoakRecord } from './report.js';
import { Tally } from './tally.js';
import { PROCESS_METRICS_REFRESH_MS } from '../../../src/metrics/registry.js';

const FLAGS: Readonly<Record<string, FlagSpec>> = {
  'duration-secs': { type: 'string', usage: '--duration-secs N', description: 'length of the load (default 600; --quick: 20)' },
  'swap-every-secs': { type: 'string', usage: '--swap-every-secs N', description: 'reload the LLM with the other precision this often (default 60; --quick: 8)' },
  'malloc-arena-max': {
    type: 'string',
    usage: '--malloc-arena-max N|default',
    description: "glibc's MALLOC_ARENA_MAX for the server (default 1, the setting README recommends on Linux; 'default' leaves glibc's own, 8 per core)",
  },
  'offthread-json-bytes': {
    type: 'string',
    usage: '--offthread-json-bytes N',
    description: "the server's --offthread-json-bytes (default: the server's, 1 MiB; 0 parses every body on the serving thread, as before issue 35)",
  },
  'ws-send-timeout-secs': {
    type: 'string',
    usage: '--ws-send-timeout-secs N',
    description: "the server's --ws-send-timeout-secs: a WebSocket client that stops reading must be dropped within it (default 10; --quick: 2)",
  },
};

const MODELS = { llm: 'qwen3-tiny', encoder: 'bert-tiny', cnn: 'resnet-tiny' } as const;

export function soakScenario(): Scenario {
  return {
    name: 'soak',
    description: 'robustness under a mixed load for a set duration: outcomes, engine restarts, leaked KV blocks, memory and event-loop lag over time',
    flags: FLAGS,
    defaults: { full: { reps: 1, warmup: 0 }, quick: { reps: 1, warmup: 0 }, baseline: 'mixed' },
    prepare: (context) => prepareSoak(context),
  };
}

/** The default repository's three models, configs copied and weights linked, in a folder of its own. */
async function soakRepository(): Promise<string> {
  await ensureDefaultRepository();
  const root = await mkdtemp(join(tmpdir(), 'conveyor-bench-soak-'));
  for (const model of Object.values(MODELS)) {
    await mkdir(join(root, model));
    await writeFile(join(root, model, 'config.pbtxt'), await readFile(join(DEFAULT_REPOSITORY, model, 'config.pbtxt')));
    await symlink(join(DEFAULT_REPOSITORY, model, '1'), join(root, model, '1'), 'dir');
    const labels = join(DEFAULT_REPOSITORY, model, 'labels.txt');
    if (existsSync(labels)) await copyFile(labels, join(root, model, 'labels.txt'));
  }
  return root;
}

/** mulberry32: the same load for the same seed. */
function random(seed: number): (n: number) => number {
  let a = seed >>> 0;
  return (n) => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return Math.floor((((t ^ (t >>> 14)) >>> 0) / 2 ** 32) * n);
  };
}

async function prepareSoak(context: ScenarioContext): Promise<PreparedScenario> {
  const { flags, quick, log } = context;
  const durationS = positiveInt(flags['duration-secs'], quick ? 20 : 600, '--duration-secs', 1);
  const swapEveryS = positiveInt(flags['swap-every-secs'], quick ? 8 : 60, '--swap-every-secs', 1);
  const wsSendTimeoutS = positiveInt(flags['ws-send-timeout-secs'], quick ? 2 : 10, '--ws-send-timeout-secs', 1);
  // The stalled client stops reading this long; the server must have dropped it by then (its
  // buffers fill within a few hundred engine steps, then the send timeout runs).
  const stallHoldS = 2 * wsSendTimeoutS + 15;
  const offthreadFlag = flags['offthread-json-bytes'];
  const offthreadArgs = offthreadFlag === undefined ? [] : ['--offthread-json-bytes', String(Number(offthreadFlag))];
  const arenaFlag = flags['malloc-arena-max'];
  const mallocArenaMax = arenaFlag === 'default' ? undefined : String(positiveInt(arenaFlag, 1, '--malloc-arena-max', 1));
  const root = await soakRepository();
  let server: ServerProcess | undefined;
  const dispose = async (): Promise<void> => {
    await server?.stop();
    await rm(root, { recursive: true, force: true });
  };
  try {
    log('starting the server on the default repository’s tiny models…');
    server = await startServerProcess(
      root,
      180_000,
      [
        '--model-control-mode',
        'explicit',
        '--load-model',
        '*',
        '--exit-timeout-secs',
        '5',
        '--ws-send-timeout-secs',
        String(wsSendTimeoutS),
        '--ws-max-message-bytes',
        String(16 * 1024 * 1024),
        ...offthreadArgs,
      ],
      mallocArenaMax ? { MALLOC_ARENA_MAX: mallocArenaMax } : {},
    );
    await waitForModels(server.http, [MODELS.llm, MODELS.encoder], 120_000);
    const cnnMetadata = (await (await fetch(`${server.http}/v2/models/${MODELS.cnn}`)).json()) as ModelMetadata;
    const target: SoakTarget = { http: server.http, ...MODELS, cnnMetadata, cnnRequest: httpBinaryRequest(buildInputs(cnnMetadata, 1)), requestTimeoutMs: 60_000 };
    const loadAtStart = loadavg();
    const running = server;
    let record: SoakRecord | undefined;
    const info = { group: 'soak', variant: 'mixed', point: `${durationS} s` };
    const soakCase: BenchCase = {
      ...info,
      params: { durationS, swapEveryS, wsSendTimeoutS },
      run: async () => {
        record = await runSoak(running, target, { durationS, swapEveryS, stallHoldS }, log);
      },
    };
    return {
      cases: [soakCase],
      skipped: [],
      charts: soakCharts(`${durationS} s mixed load`),
      notes: [
        `Server: \`src/cli.ts serve\` as a child process (pid ${server.pid}) on the default repository's tiny models (${Object.values(MODELS).join(', ')}), --model-control-mode explicit, ${mallocArenaMax ? `MALLOC_ARENA_MAX=${mallocArenaMax}` : "glibc's default malloc arenas"}.`,
        `Clients, all at once for ${durationS} s: 4 streaming chats (SSE, random lengths, sampled), 2 completion loops with stop ["e","a","o"," "], 2 embedding loops, 1 CNN infer loop (KServe binary tensors), 1 loop of malformed and hostile requests (${'bad-requests.ts'}), 2 loops of streams hung up after 1–3 SSE events, 1 WebSocket client that starts 16 long generations and 50,000 more that the per-socket cap refuses, then stops reading (the server runs with --ws-send-timeout-secs ${wsSendTimeoutS} and must drop it; the client reads again after ${stallHoldS} s to see whether it was), 1 WebSocket client sending invalid messages (the server must close it, 1008), 1 loop of ~10 MB KServe JSON infers (${MODELS.cnn} at batch 14 as JSON numbers) and 1 of 10 MB WebSocket frames (a greedy generation with 10 × 1 MB stop strings, then the same frame cut short: done and an error frame expected; the server runs with --ws-max-message-bytes 16 MiB), each every 2 s, and a precision swap of ${MODELS.llm} (fp32 ↔ int8) every ${swapEveryS} s.`,
        'Sampled once a second: RSS from /proc, nodejs_eventloop_lag_p99/max_seconds (prom-client resets them each scrape, so each sample covers the second before it), the engine gauges, conveyor_worker_alive, every *restarts_total counter, and GET /v2/health/ready latency.',
      ],
      settings: { durationS, swapEveryS, wsSendTimeoutS, mallocArenaMax: mallocArenaMax ?? 'default', offthreadJsonBytes: offthreadFlag ?? 'default', cores: availableParallelism() },
      conclude: () => {
        if (!record) return { notes: ['the soak did not run'] };
        const load = `Machine load: 1/5/15-minute load averages ${loadAtStart.map((l) => l.toFixed(2)).join(' / ')} before and ${loadavg()
          .map((l) => l.toFixed(2))
          .join(' / ')} after, on ${availableParallelism()} cores.`;
        return { metrics: new Map([[caseId(info), soakMetrics(record)]]), results: soakResults(record), notes: [load] };
      },
      dispose,
    };
  } catch (error) {
    await dispose();
    throw error;
  }
}

interface SoakSettings {
  readonly durationS: number;
  readonly swapEveryS: number;
  readonly stallHoldS: number;
}

async function runSoak(server: ServerProcess, target: SoakTarget, settings: SoakSettings, log: (line: string) => void): Promise<SoakRecord> {
  const tally = new Tally();
  let running = true;
  let endNow: () => void = () => {};
  const ended = new Promise<void>((resolve) => (endNow = resolve));
  const pause = (ms: number): Promise<void> => Promise.race([ended, new Promise<void>((resolve) => setTimeout(resolve, ms).unref())]);
  const context: ActorContext = { target, tally, running: () => running && !server.exited(), pause, random: random(20261201) };
  const actors: Actor[] = [
    ...[0, 1, 2, 3].map(streamingChat),
    stopStringCompletions,
    stopStringCompletions,
    embeddings,
    embeddings,
    cnnInfer,
    largeJsonInfers(),
    largeWebSocketFrames(),
    badRequests(),
    hangUps(0),
    hangUps(1),
    stalledWebSocket(settings.stallHoldS * 1000),
    garbageWebSocket,
    precisionSwaps(settings.swapEveryS * 1000),
  ];
  await resetLagWindow(server, PROCESS_METRICS_REFRESH_MS);
  const monitor = startMonitor(server, 1000);
  const started = performance.now();
  const timer = setTimeout(() => {
    running = false;
    endNow();
  }, settings.durationS * 1000);
  const progress = setInterval(() => log(`soak: ${Math.round((performance.now() - started) / 1000)} s of ${settings.durationS} s`), 30_000);
  try {
    await Promise.all(actors.map((actor) => actor.run(context)));
  } finally {
    clearTimeout(timer);
    clearInterval(progress);
  }
  const settled = await settle(server, target, started);
  await monitor.stop();
  return { durationS: settings.durationS, rows: tally.rows(), samples: monitor.samples, serverCrashed: server.exited(), ...settled };
}

/**
 * After the load: waits (up to a minute) until the engine has nothing running or waiting, then
 * reads its KV usage. The engine's gauges are published with its step messages, and a reload
 * drops them until the new engine steps, so a one-token probe makes it publish fresh ones.
 */
async function settle(server: ServerProcess, target: SoakTarget, started: number): Promise<Pick<SoakRecord, 'kvUsageAfter' | 'settledAfterS' | 'notIdle'>> {
  const ended = performance.now();
  let last: Sample | undefined;
  while (performance.now() - ended < 60_000 && !server.exited()) {
    last = await sample(server, (performance.now() - started) / 1000);
    if (last.running === null) {
      const probe = { model: target.llm, prompt: 'probe', max_tokens: 1 };
      await fetch(`${target.http}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(probe) }).then(
        (r) => r.arrayBuffer(),
        () => undefined,
      );
      last = await sample(server, (performance.now() - started) / 1000);
    }
    if (last.running === 0 && last.waiting === 0) return { kvUsageAfter: last.kvUsage, settledAfterS: (performance.now() - ended) / 1000, notIdle: null };
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return { kvUsageAfter: null, settledAfterS: null, notIdle: last ? `running ${last.running}, waiting ${last.waiting}, KV usage ${last.kvUsage}` : 'no sample' };
}
