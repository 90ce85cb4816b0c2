// The servers a run compares, all on the same model directory: Conveyor (continuous batching),
// Conveyor with batching off (max_num_seqs 1: one sequence in the engine at a time), and the
// naive server. Both Conveyor variants live in one server process over a temporary repository
// whose version directories link to the model (`serve --model DIR` has no engine settings, so
// it cannot say max_num_seqs 1); they never run at the same time, so they do not compete. The
// naive server is a process of its own.

import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startChildServer, type ChildServer } from './child-server.js';
import type { CompletionTarget } from './client.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const STARTUP_MS = 240_000;

export type SystemName = 'conveyor' | 'conveyor-serial' | 'naive';
export const SYSTEMS: readonly SystemName[] = ['conveyor', 'conveyor-serial', 'naive'];

export interface System {
  readonly name: string;
  readonly target: CompletionTarget;
  readonly description: string;
}

export interface StartedSystems {
  readonly systems: System[];
  readonly failures: { readonly name: string; readonly reason: string }[];
  stop(): Promise<void>;
}

export interface ServeSetup {
  /** Hugging Face decoder directory (config.json, tokenizer files, onnx/model.onnx). */
  readonly modelDir: string;
  /** Served model name; the batching-off variant is `<name>-serial`. */
  readonly modelName: string;
  readonly which: readonly SystemName[];
  /** max_num_seqs of the batching variant. */
  readonly maxNumSeqs: number;
}

export function conveyorConfig(name: string, maxNumSeqs: number): string {
  const parameter = (key: string, value: string | number): string => `parameters: { key: "${key}" value: { string_value: "${value}" } }`;
  return [
    `name: "${name}"`,
    'backend: "llm"',
    'max_batch_size: 0',
    'model_transaction_policy { decoupled: true }',
    'instance_group [ { count: 1 kind: KIND_CPU } ]',
    parameter('precision', 'fp32'),
    parameter('max_num_seqs', maxNumSeqs),
    '',
  ].join('\n');
}

/** Starts what `setup.which` names, in parallel; a system that fails to start is reported, not fatal. */
export async function startSystems(setup: ServeSetup, log: (line: string) => void): Promise<StartedSystems> {
  const children: ChildServer[] = [];
  const cleanups: (() => Promise<unknown>)[] = [];
  const failures: StartedSystems['failures'] = [];
  const systems: System[] = [];
  const conveyorWanted = setup.which.filter((s) => s !== 'naive');
  const starts: Promise<void>[] = [];
  if (conveyorWanted.length > 0) {
    starts.push(
      startConveyor(setup, conveyorWanted, cleanups).then(
        (started) => {
          children.push(started.child);
          systems.push(...started.systems);
          log(`conveyor serving ${started.systems.map((s) => s.target.model).join(', ')} at ${started.child.address} (pid ${started.child.pid})`);
        },
        (error: unknown) => void failures.push(...conveyorWanted.map((name) => ({ name, reason: messageOf(error) }))),
      ),
    );
  }
  if (setup.which.includes('naive')) {
    starts.push(
      startNaive(setup).then(
        (child) => {
          children.push(child);
          systems.push(naiveSystem(setup, child));
          log(`naive server at ${child.address} (pid ${child.pid})`);
        },
        (error: unknown) => void failures.push({ name: 'naive', reason: messageOf(error) }),
      ),
    );
  }
  await Promise.all(starts);
  // Declared order, whatever order they came up in.
  systems.sort((a, b) => SYSTEMS.indexOf(a.name as SystemName) - SYSTEMS.indexOf(b.name as SystemName));
  return {
    systems,
    failures,
    stop: async () => {
      await Promise.all(children.map((c) => c.stop()));
      for (const cleanup of cleanups) await cleanup();
    },
  };
}

async function startConveyor(setup: ServeSetup, which: readonly SystemName[], cleanups: (() => Promise<unknown>)[]) {
  const root = await mkdtemp(join(tmpdir(), 'conveyor-bench-serve-'));
  cleanups.push(() => rm(root, { recursive: true, force: true }));
  const served = which.map((name) => ({ name, model: name === 'conveyor' ? setup.modelName : `${setup.modelName}-serial`, seqs: name === 'conveyor' ? setup.maxNumSeqs : 1 }));
  for (const s of served) {
    await mkdir(join(root, s.model));
    await writeFile(join(root, s.model, 'config.pbtxt'), conveyorConfig(s.model, s.seqs));
    await symlink(resolve(setup.modelDir), join(root, s.model, '1'), 'dir');
  }
  const args = ['--import', 'tsx', join(ROOT, 'src', 'cli.ts'), 'serve', '--model-repository', root, '--host', '127.0.0.1'];
  args.push('--http-port', '0', '--grpc-port', '0', '--metrics-port', '0', '--exit-timeout-secs', '2');
  const child = await startChildServer({ args, cwd: ROOT, ready: conveyorListening, timeoutMs: STARTUP_MS });
  try {
    // A model that failed to load says so in the log; no point waiting out the timeout then.
    const failed = (): string | undefined => /failed to load[^\n]*/.exec(child.tail())?.[0];
    await waitForModels(
      child.address,
      served.map((s) => s.model),
      STARTUP_MS,
      failed,
    );
  } catch (error) {
    await child.stop();
    throw new Error(`${messageOf(error)}\n${child.tail()}`);
  }
  const systems = served.map((s) => ({
    name: s.name,
    target: { baseUrl: child.address, model: s.model },
    description: `${s.name}: Conveyor (\`src/cli.ts serve\`, pid ${child.pid}) serving \`${s.model}\` with max_num_seqs ${s.seqs}${s.seqs === 1 ? ' (batching off)' : ''}, other engine settings at their defaults`,
  }));
  return { child, systems };
}

/**
 * The server listens before its models are loaded; a model is servable once /v1/models lists it
 * (until the OpenAI route answers at all, its 404 is one more reason to keep waiting).
 */
export async function waitForModels(baseUrl: string, names: readonly string[], timeoutMs: number, failed: () => string | undefined = () => undefined): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  let last = 'no answer yet';
  while (performance.now() < deadline) {
    const failure = failed();
    if (failure !== undefined) throw new Error(failure);
    try {
      const response = await fetch(`${baseUrl}/v1/models`);
      const listed = response.ok ? (((await response.json()) as { data?: { id?: string }[] }).data?.map((m) => m.id) ?? []) : [];
      if (names.every((name) => listed.includes(name))) return;
      last = response.ok ? `listed: ${listed.join(', ') || 'none'}` : `HTTP ${response.status}`;
    } catch (error) {
      last = messageOf(error);
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`${names.join(', ')} not listed by ${baseUrl}/v1/models after ${timeoutMs / 1000} s (${last})`);
}

/** The CLI logs JSON lines ({time, msg}); the HTTP listening line gives the base URL. */
export function conveyorListening(line: string): string | undefined {
  let message = line;
  try {
    const parsed = JSON.parse(line) as { msg?: unknown };
    if (typeof parsed.msg === 'string') message = parsed.msg;
  } catch {
    // Not JSON (a stack trace): kept as it is.
  }
  const match = /^HTTP\b.*listening on (\S+):(\d+)$/.exec(message);
  return match ? `http://${match[1]}:${match[2]}` : undefined;
}

async function startNaive(setup: ServeSetup): Promise<ChildServer> {
  const script = join(ROOT, 'bench', 'scenarios', 'serve', 'naive-server.ts');
  const args = ['--import', 'tsx', script, '--model-dir', resolve(setup.modelDir), '--name', setup.modelName, '--host', '127.0.0.1', '--port', '0'];
  return startChildServer({ args, cwd: ROOT, ready: (line) => /^naive server listening on (\S+)$/.exec(line)?.[1], timeoutMs: STARTUP_MS });
}

function naiveSystem(setup: ServeSetup, child: ChildServer): System {
  return {
    name: 'naive',
    target: { baseUrl: child.address, model: setup.modelName },
    description: `naive: \`bench/scenarios/serve/naive-server.ts\` (pid ${child.pid}), node:http, one request at a time, greedy loop with past_key_values straight through onnxruntime-node`,
  };
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
