// Servers under test run as child processes, never inside the bench: onnxruntime-node computes
// on the calling thread, so a server sharing the load generator's event loop would stall the
// clock that times it. A child is ready when a line of its output says where it listens.

import { spawn, type ChildProcess } from 'node:child_process';

const KEEP_LINES = 40;

export interface ChildServer {
  /** What `ready` captured from the listening line, e.g. the base URL. */
  readonly address: string;
  readonly pid: number;
  /** The last lines of its output, for an error message. */
  readonly tail: () => string;
  /** SIGTERM, then SIGKILL if it has not exited after `graceMs`. */
  stop(graceMs?: number): Promise<void>;
}

export interface ChildSpec {
  readonly args: readonly string[];
  readonly cwd: string;
  /** Returns the address once a line says the server is listening; undefined otherwise. */
  readonly ready: (line: string) => string | undefined;
  readonly timeoutMs: number;
}

export async function startChildServer(spec: ChildSpec): Promise<ChildServer> {
  const child = spawn(process.execPath, [...spec.args], { cwd: spec.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  // A bench that dies must not leave a server spinning on a shared machine.
  const killOnExit = (): void => void child.kill('SIGKILL');
  process.once('exit', killOnExit);
  const lines: string[] = [];
  const tail = (): string => lines.join('\n');
  const address = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => fail(`not listening after ${spec.timeoutMs / 1000} s`), spec.timeoutMs);
    const fail = (why: string): void => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      process.removeListener('exit', killOnExit);
      reject(new Error(`server did not start: ${why}\n${tail()}`));
    };
    readLines(child, (line) => {
      lines.push(line);
      if (lines.length > KEEP_LINES) lines.shift();
      const found = spec.ready(line);
      if (found === undefined) return;
      clearTimeout(timer);
      child.removeAllListeners('exit');
      resolve(found);
    });
    child.once('exit', (code, signal) => fail(`exited early (code ${code}, signal ${signal})`));
    child.once('error', (error) => fail(error.message));
  });
  return { address, pid: child.pid!, tail, stop: (graceMs = 10_000) => stopChild(child, graceMs, killOnExit) };
}

/** Both pipes are always drained: a full pipe would block the server's logging, and with it the server. */
function readLines(child: ChildProcess, onLine: (line: string) => void): void {
  for (const stream of [child.stdout, child.stderr]) {
    let buffered = '';
    stream?.setEncoding('utf8');
    stream?.on('data', (chunk: string) => {
      buffered += chunk;
      const parts = buffered.split('\n');
      buffered = parts.pop() ?? '';
      for (const line of parts) if (line.trim() !== '') onLine(line);
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
