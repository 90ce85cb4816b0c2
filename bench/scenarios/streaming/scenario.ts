// `npm run bench -- streaming`: what streaming costs. The real server runs as a child process on
// the decoder; each transport (non-streaming chat, SSE, WebSocket, gRPC Generate) sends the same
// concurrent greedy chat requests with ignore_eos and a fixed max_tokens, interleaved by the
// harness round by round. Per transport: output tokens/s, the server's main-thread CPU per token
// (/proc of the child), and GET /v2/health/ready and GET /metrics latency polled while the load runs.

import { mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureBuilt } from '../../../models/catalog.js';
import type { ModelSize } from '../../../models/common/model-files.js';
import { positiveInt, stringList } from '../../harness/args.js';
import { percentile } from '../../harness/stats.js';
import type { FlagSpec, PreparedScenario, Scenario, ScenarioContext } from '../../harness/scenario.js';
import type { BenchCase, RunSlot } from '../../harness/types.js';
import { startServerProcess, type ServerProcess } from '../infer/server-process.js';
import { waitForModels, writeLinkedRepository } from '../serve/conveyor-server.js';
import { MAX_NICE, lowerThisThreadPriority } from '../../../src/threads/thread-priority.js';
import { healthAndMetricsUrls, openPoller, type Poller, type PollResult, readCpu } from './probes.js';
import { BASELINE, conclude, streamingCharts, type Recorded } from './report.js';
import { openClient, TRANSPORTS, type GenerationParams, type Transport, type TransportClient } from './transports.js';

const FLAGS: Readonly<Record<string, FlagSpec>> = {
  size: { type: 'string', usage: '--size tiny|bench', description: 'decoder the server runs (default bench; --quick: tiny)' },
  concurrency: { type: 'string', usage: '--concurrency N', description: 'requests in flight per run, all sent at once (default 32; --quick: 8)' },
  'max-tokens': { type: 'string', usage: '--max-tokens N', description: 'output tokens per request, greedy with ignore_eos (default 64; --quick: 8)' },
  transports: { type: 'string', usage: '--transports a,b', description: `transports to run (default ${TRANSPORTS.join(',')})` },
  'client-nice': {
    type: 'string',
    usage: '--client-nice N',
    description: "nice steps the load generator runs below the server and the probes, as a client on another machine takes none of the server's cores (default 0: the same priority; Linux)",
  },
};

export type DecoderDir = (size: ModelSize) => Promise<string>;

export function streamingScenario(decoder: DecoderDir = async (size) => (await ensureBuilt('qwen3', size)).dir): Scenario {
  return {
    name: 'streaming',
    description: 'streaming cost: output tokens/s over SSE, WebSocket and gRPC vs non-streaming chat, main-thread CPU per token, health latency under load',
    flags: FLAGS,
    // Every run is a whole load; the transports are warmed in prepare() with a short burst each.
    defaults: { full: { reps: 5, warmup: 0 }, quick: { reps: 2, warmup: 0 }, baseline: BASELINE },
    prepare: (context) => prepareStreaming(decoder, context),
  };
}

const TOPICS = ['a lighthouse', 'the tides', 'a cat on a train', 'paper boats', 'winter bread', 'an old radio', 'mountain goats', 'a clock tower'];

/** Distinct short chat prompts, the same for every transport. */
export function promptsFor(count: number): string[] {
  return Array.from({ length: count }, (_, i) => `Request ${i + 1}: tell me a short story about ${TOPICS[i % TOPICS.length]}, part ${Math.floor(i / TOPICS.length) + 1}.`);
}

async function prepareStreaming(decoder: DecoderDir, context: ScenarioContext): Promise<PreparedScenario> {
  const { flags, quick, log } = context;
  const size = (flags['size'] ?? (quick ? 'tiny' : 'bench')) as ModelSize;
  if (size !== 'tiny' && size !== 'bench') throw new Error(`--size must be tiny or bench, got ${String(size)}`);
  const concurrency = positiveInt(flags['concurrency'], quick ? 8 : 32, '--concurrency', 1);
  const maxTokens = positiveInt(flags['max-tokens'], quick ? 8 : 64, '--max-tokens', 1);
  const transports = stringList(flags['transports'], TRANSPORTS, TRANSPORTS, '--transports');
  const clientNice = flags['client-nice'] === undefined ? 0 : Number(flags['client-nice']);
  if (!Number.isInteger(clientNice) || clientNice < 0 || clientNice > MAX_NICE) throw new Error(`--client-nice must be an integer from 0 to ${MAX_NICE}, got ${String(flags['client-nice'])}`);
  const loadAtStart = loadavg();
  log(`building qwen3 ${size}…`);
  const modelDir = await decoder(size);
  const model = `qwen3-${size}`;
  const root = await mkdtemp(join(tmpdir(), 'conveyor-bench-streaming-'));
  let server: ServerProcess | undefined;
  let poller: Poller | undefined;
  const clients: TransportClient[] = [];
  const dispose = async (): Promise<void> => {
    for (const client of clients) await client.close().catch(() => undefined);
    poller?.close();
    await server?.stop();
    await rm(root, { recursive: true, force: true });
  };
  try {
    await writeLinkedRepository(root, [{ name: model, dir: modelDir, parameters: { max_num_seqs: Math.max(32, concurrency) } }]);
    log(`starting the server on ${modelDir}…`);
    // vLLM's names too: the scrape measured is the full one a router built for vLLM reads.
    server = await startServerProcess(root, undefined, ['--metrics-engine-type', 'vllm']);
    await waitForModels(server.http, [model], 240_000);
    log(`serving ${model} at ${server.http}, gRPC ${server.grpcAddress} (pid ${server.pid})`);
    // The server and the probes first, at this process's priority; then the load generator (this thread) below them.
    poller = await openPoller();
    const clientPriority = lowerThisThreadPriority(clientNice);
    if (clientPriority) log(`load generator: ${clientPriority.replace('compute threads', 'this thread')}`);
    const params: GenerationParams = { model, maxTokens };
    const prompts = promptsFor(concurrency);
    for (const transport of transports) {
      const client = await openClient(transport, { http: server.http, grpcAddress: server.grpcAddress });
      clients.push(client);
      log(`warming up ${transport}…`);
      // Every prompt once (fills the prefix cache alike for all), with few tokens.
      checkDelivered(transport, await client.run(prompts, { model, maxTokens: Math.min(4, maxTokens) }), Math.min(4, maxTokens));
    }
    log('health latency with the server idle…');
    const idlePoll = await poller.start([healthAndMetricsUrls(server.http)[0]]);
    await new Promise((done) => setTimeout(done, quick ? 1000 : 3000));
    const [idle] = (await idlePoll.stop()) as [PollResult];
    const recorded: Recorded = new Map();
    const pid = server.pid;
    const http = server.http;
    const probes = poller;
    const cases: BenchCase[] = clients.map((client) => {
      const info = { group: 'chat', variant: client.transport, point: `${concurrency} streams × ${maxTokens} tokens` };
      const id = `${info.group} ${info.variant} ${info.point}`;
      recorded.set(id, { transport: client.transport, runs: [] });
      return {
        ...info,
        params: { concurrency, maxTokens, size },
        work: { count: concurrency * maxTokens, unit: 'tokens' },
        run: async (slot?: RunSlot) => {
          const polls = await probes.start(healthAndMetricsUrls(http));
          const before = readCpu(pid);
          const outcome = await client.run(prompts, params).then(
            (delivered) => ({ delivered }),
            (error: unknown) => ({ error }),
          );
          const after = readCpu(pid);
          const [polled, scraped] = (await polls.stop()) as [PollResult, PollResult];
          if ('error' in outcome) throw outcome.error;
          const { delivered } = outcome;
          checkDelivered(client.transport, delivered, maxTokens);
          if (slot?.warmup) return;
          recorded.get(id)!.runs.push({
            tokens: delivered.reduce((n, d) => n + d.tokens, 0),
            messages: delivered.reduce((n, d) => n + d.messages, 0),
            requests: delivered.length,
            mainCpuMs: before && after ? after.mainMs - before.mainMs : undefined,
            processCpuMs: before && after ? after.processMs - before.processMs : undefined,
            healthMs: polled.latenciesMs,
            healthFailures: polled.failures,
            metricsMs: scraped.latenciesMs,
            metricsFailures: scraped.failures,
            texts: delivered.map((d) => d.text),
          });
        },
      };
    });
    return {
      cases,
      skipped: [],
      charts: streamingCharts(`${model}, ${concurrency} concurrent chats`),
      notes: [...setupNotes(model, concurrency, maxTokens, pid, clientNice), idleNote(idle.latenciesMs, idle.failures)],
      settings: { size, concurrency, maxTokens, transports, clientNice, cores: availableParallelism() },
      conclude: (results) => {
        const conclusion = conclude(results, recorded);
        const load = `Machine load: 1/5/15-minute load averages ${fmtLoad(loadAtStart)} before the run and ${fmtLoad(loadavg())} after, on ${availableParallelism()} cores shared by the server, the load generator and whatever else runs there.`;
        return { ...conclusion, notes: [load] };
      },
      dispose,
    };
  } catch (error) {
    await dispose();
    throw error;
  }
}

const fmtLoad = (load: readonly number[]): string => load.map((l) => l.toFixed(2)).join(' / ');

function checkDelivered(transport: Transport, delivered: readonly { tokens: number }[], maxTokens: number): void {
  const short = delivered.filter((d) => d.tokens !== maxTokens);
  if (short.length > 0) throw new Error(`${transport}: ${short.length} requests did not deliver ${maxTokens} tokens (ignore_eos), e.g. ${short[0]!.tokens}`);
}

function idleNote(latenciesMs: readonly number[], failures: number): string {
  const sorted = [...latenciesMs].sort((a, b) => a - b);
  if (sorted.length === 0) return 'Health with the server idle: no polls answered.';
  const at = (p: number): string => percentile(sorted, p).toFixed(2);
  return `Health with the server idle (before the loads, same poller): p50 ${at(50)} / p99 ${at(99)} / max ${sorted.at(-1)!.toFixed(2)} ms over ${sorted.length} polls${failures > 0 ? `, ${failures} failed` : ''}.`;
}

function setupNotes(model: string, concurrency: number, maxTokens: number, pid: number, clientNice: number): string[] {
  return [
    `Server: \`src/cli.ts serve\` as a child process (pid ${pid}) on a temporary repository holding \`${model}\` (backend llm, max_num_seqs ${Math.max(32, concurrency)}, other engine settings at their defaults).`,
    `Each run: ${concurrency} chat requests sent at once (distinct prompts, the same for every transport), temperature 0, ignore_eos, max_tokens ${maxTokens}; the run ends when the last request finishes. non-streaming and sse: POST /v1/chat/completions over fetch (stream false / true with include_usage); websocket: every request multiplexed on one /v1/ws socket; grpc: conveyor.v1.GenerationService/Generate, one call per request on one channel. Transports run interleaved, one run each per round; each was warmed with one short burst of the same prompts (so prompts hit the prefix cache alike).`,
    "Output tok/s: tokens of a run ÷ the median run time. Main-thread CPU: utime + stime of the server's main thread (/proc/<pid>/task/<pid>/stat, 10 ms ticks) over the measured runs ÷ tokens delivered; the engine steps on worker threads, so this is the serving side (HTTP, framing, serialization, detokenized text). Δ main CPU vs non-streaming is the streaming cost per token on the main thread; Δ wall is 1/throughput − 1/throughput(non-streaming) per token (noise-bound on a loaded machine). Process CPU counts every thread, engine included.",
    "Health: GET /v2/health/ready polled about every 50 ms while each measured run was in flight, from a poller process of its own (as the endpoint picker scrapes from its own process), so the latency waits on the server and the machine, not on the load generator's event loop, which is parsing the streams.",
    'Scrape: GET /metrics on the HTTP serving port (the server runs with --metrics-engine-type vllm, so every conveyor: and vllm: series is in it), polled the same way and at the same time as health, the body read whole; the endpoint picker scrapes every 50 ms and reads metrics older than 200 ms as saturated, so the target is p99 < 20 ms.',
    clientNice > 0
      ? `Priorities: the load generator (this bench's thread) ran ${clientNice} nice steps below the server and the probes, as a client on another machine takes none of the server's cores; the server's model threads run --compute-thread-nice (default 10) below its serving thread.`
      : "Priorities: the load generator ran at the server's and the probes' priority (--client-nice 0), competing with the server's serving thread for the same cores; the server's model threads run --compute-thread-nice (default 10) below its serving thread.",
  ];
}
