// The server under test runs as a child process (`src/cli.ts serve` on port 0), so the load
// generator's event loop is not the server's: with both in one process, client work would show up
// as server queue time. The ports come from the lines the server logs once it is listening.

import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const LISTENING = /^(HTTP|gRPC|Metrics)(?: \(KServe v2\))? listening on (\S+):(\d+)$/;
const KEEP_LINES = 40;

export interface ServerProcess {
  readonly http: string;
  readonly grpcAddress: string;
  readonly metrics: string;
  readonly pid: number;
  /** True once the process has exited (a crash, when the caller did not stop it). */
  readonly exited: () => boolean;
  /** SIGTERM, then SIGKILL if it has not exited after `graceMs`. */
  stop(graceMs?: number): Promise<void>;
}

/** `extraArgs` go after the defaults, so they can override them (a later flag wins); `env` is added to this process's environment. */
export async function startServerProcess(repository: string, timeoutMs = 180_000, extraArgs: readonly string[] = [], env: Readonly<Record<string, string>> = {}): Promise<ServerProcess> {
  const args = [
    ...(process.env.BENCH_SERVER_NODE_ARGS?.split(' ').filter(Boolean) ?? []),
    '--import',
    'tsx',
    join(ROOT, 'src', 'cli.ts'),
    'serve',
    '--model-repository',
    repository,
    '--host',
    '127.0.0.1',
  ];
  args.push('--http-port', '0', '--grpc-port', '0', '--metrics-port', '0', '--exit-timeout-secs', '2', ...extraArgs);
  const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  // A bench that dies must not leave a server spinning on a shared machine.
  const killOnExit = (): void => void child.kill('SIGKILL');
  process.once('exit', killOnExit);
  const tail: string[] = [];
  const ports = await new Promise<{ http: string; grpc: string; metrics: string }>((resolvePorts, reject) => {
    const found: { http?: string; grpc?: string; metrics?: string } = {};
    const timer = setTimeout(() => fail(`no listening lines after ${timeoutMs / 1000} s`), timeoutMs);
    const fail = (why: string): void => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(new Error(`server did not start: ${why}\n${tail.join('\n')}`));
    };
    readLines(child, (line) => {
      tail.push(line);
      if (tail.length > KEEP_LINES) tail.shift();
      const match = LISTENING.exec(messageOf(line));
      if (!match) return;
      found[match[1] === 'HTTP' ? 'http' : match[1] === 'gRPC' ? 'grpc' : 'metrics'] = `${match[2]}:${match[3]}`;
      if (found.http && found.grpc && found.metrics) {
        clearTimeout(timer);
        resolvePorts({ http: found.http, grpc: found.grpc, metrics: found.metrics });
      }
    });
    child.once('exit', (code, signal) => fail(`exited early (code ${code}, signal ${signal})`));
    child.once('error', (error) => fail(error.message));
  });
  child.removeAllListeners('exit');
  return {
    http: `http://${ports.http}`,
    grpcAddress: ports.grpc,
    metrics: `http://${ports.metrics}`,
    pid: child.pid!,
    exited: () => child.exitCode !== null || child.signalCode !== null,
    stop: (graceMs = 10_000) => stopChild(child, graceMs, killOnExit),
  };
}

/** The CLI logs JSON lines ({time, msg}); anything else (a stack trace) is kept as it is. */
function messageOf(line: string): string {
  try {
    const parsed = JSON.parse(line) as { msg?: unknown };
    return typeof parsed.msg === 'string' ? parsed.msg : line;
  } catch {
    return line;
  }
}

/** Both pipes are always drained: a full pipe would block the server's logging, and with it the server. */
function readLines(child: ChildProcess, onLine: (line: string) => void): void {
  for (const stream of [child.stdout, child.stderr]) {
    let buffered = '';
    stream?.setEncoding('utf8');
    stream?.on('data', (chunk: string) => {
      buffered += chunk;
      const lines = buffered.split('\n');
      buffered = lines.pop() ?? '';
      for (const line of lines) if (line.trim() !== '') onLine(line);
    });
  }
}

async function stopChild(child: ChildProcess, graceMs: number, killOnExit: () => void): Promise<void> {
  process.removeListener('exit', killOnExit);
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}
