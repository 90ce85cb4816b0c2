// The real CLI as a child process (`node --import tsx src/cli.ts serve`, or a compiled build's cli.js), for tests that send it
// signals: ports come from its JSON log lines, and tests wait for log lines, never for time.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { constants } from 'node:os';

export interface LogLine {
  readonly msg: string;
  readonly [field: string]: unknown;
}

export interface CliServer {
  readonly child: ChildProcessWithoutNullStreams;
  readonly http: string;
  readonly httpPort: number;
  readonly grpcAddress: string;
  readonly lines: LogLine[];
  /** Resolves with the first log line (already logged or still to come) whose message matches. */
  waitForLog(pattern: RegExp): Promise<LogLine>;
  /** The exit code (a signal death reads as 128 + its number), once its output is all read. */
  readonly exited: Promise<number>;
  signal(name: 'SIGTERM' | 'SIGINT'): void;
}

/** How the CLI is started: from its TypeScript sources (the default) or from a compiled build. */
export interface CliLaunch {
  /** Node's arguments before `serve`. */
  readonly entry: readonly string[];
  readonly cwd?: string;
  /** The child's environment (default: this process's). */
  readonly env?: NodeJS.ProcessEnv;
}

export const SOURCE_CLI: CliLaunch = { entry: ['--import', 'tsx', 'src/cli.ts'] };

/** What the server serves: a repository directory, or `{ model }`, one Hugging Face export (`serve --model`). */
export type CliServed = string | { readonly model: string };

export async function startCliServer(served: CliServed, args: readonly string[] = [], launch: CliLaunch = SOURCE_CLI): Promise<CliServer> {
  const source = typeof served === 'string' ? ['--model-repository', served] : ['--model', served.model];
  const child = spawn(process.execPath, [...launch.entry, 'serve', ...source, '--host', '127.0.0.1', '--http-port', '0', '--grpc-port', '0', '--metrics-port', '0', ...args], {
    stdio: ['pipe', 'pipe', 'pipe'],
    ...(launch.cwd ? { cwd: launch.cwd } : {}),
    ...(launch.env ? { env: launch.env } : {}),
  });
  const lines: LogLine[] = [];
  const waiters: { pattern: RegExp; resolve: (line: LogLine) => void }[] = [];
  let stderr = '';
  let partial = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdout.on('data', (chunk: Buffer) => {
    partial += chunk.toString();
    const complete = partial.split('\n');
    partial = complete.pop()!;
    for (const text of complete) {
      if (!text.startsWith('{')) continue;
      const line = JSON.parse(text) as LogLine;
      lines.push(line);
      for (const waiter of waiters.filter((w) => w.pattern.test(line.msg))) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(line);
      }
    }
  });
  const exited = new Promise<number>((resolve) => child.once('close', (code, signal) => resolve(code ?? 128 + constants.signals[signal!])));
  const waitForLog = (pattern: RegExp): Promise<LogLine> => {
    const seen = lines.find((l) => pattern.test(l.msg));
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      waiters.push({ pattern, resolve });
      void exited.then((code) => reject(new Error(`the server exited (${code}) before logging ${pattern}: ${stderr}`)));
    });
  };
  const port = async (pattern: RegExp): Promise<number> => Number(pattern.exec((await waitForLog(pattern)).msg)![1]);
  const httpPort = await port(/^HTTP \(KServe v2\) listening on 127\.0\.0\.1:(\d+)/);
  const grpcPort = await port(/^gRPC \(KServe v2\) listening on 127\.0\.0\.1:(\d+)/);
  return {
    child,
    http: `http://127.0.0.1:${httpPort}`,
    httpPort,
    grpcAddress: `127.0.0.1:${grpcPort}`,
    lines,
    waitForLog,
    exited,
    signal: (name) => child.kill(name),
  };
}

/** Ends a server a test left running (after a failure), without waiting for a drain. */
export async function killCliServer(server: CliServer): Promise<void> {
  if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
  await server.exited;
}
