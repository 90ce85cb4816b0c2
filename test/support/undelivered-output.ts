// The setting of the undelivered-output tests (issue 35): the tiny LLM on a server whose
// --undelivered-output-timeout-secs is BOUND_SECS and whose send timeouts (600 s) are far above
// it, so only the bound can drop a client that reads nothing; the unload timed; the SIGTERM drain
// held to the bound. Servers a test starts are stopped after it.
import { afterEach, expect } from 'vitest';
import type { LlmModel } from '../../src/serving/llm-backend.js';
import { killCliServer, startCliServer, type CliServer } from './cli-server.js';
import { LLM } from './generation.js';
import { configOf, makeRepository, startTestServer, type TestServer } from './server.js';

export const BOUND_SECS = 1;
/** What a loaded 2-core machine may add to the bound. */
export const SLACK_MS = 10_000;
const LONG_SEND_TIMEOUTS = ['--ws-send-timeout-secs', '600', '--stream-send-timeout-secs', '600'];

export interface UndeliveredOutputServers {
  /** Explicit mode with LLM loaded: its unload is what drops the clients. */
  explicitServer(): Promise<{ server: TestServer; model: LlmModel }>;
  /** The CLI in a child process, --exit-timeout-secs 600: its SIGTERM drain is what drops them. */
  cliServer(): Promise<CliServer>;
}

/** Starts the servers of a test file (with `args` beside the bound and send timeouts), each stopped after its test; call at the file's top level. */
export function undeliveredOutputServers(args: readonly string[] = []): UndeliveredOutputServers {
  const servers: TestServer[] = [];
  const cliServers: CliServer[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.stop()));
    await Promise.all(cliServers.splice(0).map(killCliServer));
  });
  const repository = () => makeRepository([{ name: LLM, from: 'qwen3-tiny', config: configOf('qwen3-tiny', LLM) }]);
  const bounded = ['--undelivered-output-timeout-secs', String(BOUND_SECS), ...LONG_SEND_TIMEOUTS, ...args];
  return {
    explicitServer: async () => {
      const server = await startTestServer(await repository(), ['--model-control-mode', 'explicit', '--load-model', LLM, ...bounded]);
      servers.push(server);
      return { server, model: server.service.llmModel(LLM) };
    },
    cliServer: async () => {
      const server = await startCliServer(await repository(), ['--exit-timeout-secs', '600', ...bounded]);
      cliServers.push(server);
      return server;
    },
  };
}

/** Unloads LLM and returns how long it took, having checked it succeeded. */
export async function timedUnload(server: TestServer): Promise<number> {
  const started = performance.now();
  const unload = await fetch(`${server.http}/v2/repository/models/${LLM}/unload`, { method: 'POST' });
  expect(unload.status).toBe(200);
  return performance.now() - started;
}

/** SIGTERM: the server exits 0 within the bound (not --exit-timeout-secs), its drain finished in time. */
export async function expectDrainWithinBound(server: CliServer): Promise<void> {
  const started = performance.now();
  server.signal('SIGTERM');
  expect(await server.exited).toBe(0);
  expect(performance.now() - started).toBeLessThan(BOUND_SECS * 1000 + SLACK_MS);
  expect(server.lines.find((l) => l.msg === 'drain: stopped')).toMatchObject({ finishedInTime: true });
}

/** Tokens the server's engines have generated so far (conveyor:generation_tokens_total), read from its /metrics. */
export async function generatedTokens(http: string): Promise<number> {
  const metrics = await (await fetch(`${http}/metrics`)).text();
  const generated = /^conveyor:generation_tokens_total\{[^}]*\} (\d+)/m.exec(metrics);
  return Number(generated?.[1] ?? 0);
}
