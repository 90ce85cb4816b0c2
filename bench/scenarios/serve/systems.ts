// The servers a run compares, all on the same model directory: Conveyor (continuous batching),
// Conveyor with batching off (max_num_seqs 1: one sequence in the engine at a time), and the
// naive server. Both Conveyor variants live in one server process over a temporary repository
// whose version directories link to the model (`serve --model DIR` has no engine settings, so
// it cannot say max_num_seqs 1); they never run at the same time, so they do not compete. The
// naive server is a process of its own.

import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { messageOf } from '../../harness/runner.js';
import { startChildServer, type ChildServer } from './child-server.js';
import type { CompletionTarget } from './client.js';
import { startLinkedConveyor } from './conveyor-server.js';

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

/** Starts what `setup.which` names, in parallel; a system that fails to start is reported, not fatal. */
export async function startSystems(setup: ServeSetup, log: (line: string) => void): Promise<StartedSystems> {
  const stops: (() => Promise<void>)[] = [];
  const failures: StartedSystems['failures'] = [];
  const systems: System[] = [];
  const conveyorWanted = setup.which.filter((s) => s !== 'naive');
  const starts: Promise<void>[] = [];
  if (conveyorWanted.length > 0) {
    starts.push(
      startConveyor(setup, conveyorWanted).then(
        (started) => {
          stops.push(started.stop);
          systems.push(...started.systems);
          log(`conveyor serving ${started.systems.map((s) => s.target.model).join(', ')} at ${started.address} (pid ${started.pid})`);
        },
        (error: unknown) => void failures.push(...conveyorWanted.map((name) => ({ name, reason: messageOf(error) }))),
      ),
    );
  }
  if (setup.which.includes('naive')) {
    starts.push(
      startNaive(setup).then(
        (child) => {
          stops.push(() => child.stop());
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
      await Promise.all(stops.map((stop) => stop()));
    },
  };
}

async function startConveyor(setup: ServeSetup, which: readonly SystemName[]) {
  const served = which.map((name) => ({ name, model: name === 'conveyor' ? setup.modelName : `${setup.modelName}-serial`, seqs: name === 'conveyor' ? setup.maxNumSeqs : 1 }));
  const models = served.map((s) => ({ name: s.model, dir: setup.modelDir, parameters: { max_num_seqs: s.seqs } }));
  const { child, stop } = await startLinkedConveyor({ models, tmpPrefix: 'conveyor-bench-serve-', timeoutMs: STARTUP_MS });
  const systems = served.map((s) => ({
    name: s.name,
    target: { baseUrl: child.address, model: s.model },
    description: `${s.name}: Conveyor (\`src/cli.ts serve\`, pid ${child.pid}) serving \`${s.model}\` with max_num_seqs ${s.seqs}${s.seqs === 1 ? ' (batching off)' : ''}, other engine settings at their defaults`,
  }));
  return { address: child.address, pid: child.pid, stop, systems };
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
