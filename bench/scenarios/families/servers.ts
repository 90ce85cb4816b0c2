// One Conveyor server at a time: a group's (a family's, or the baseline's) cases run back to back,
// and the first of them starts that group's server after stopping the previous one, so at most one
// model's weights and KV pool hold memory. The server's temporary repository has the model once
// per attention backend (`<group>-<backend>`, version directories linking the converted model).

import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startChildServer, type ChildServer } from '../serve/child-server.js';
import { sendCompletion } from '../serve/client.js';
import { buildDataset, loadPromptTokenizer, type PromptTokenizer } from '../serve/dataset.js';
import { conveyorListening, waitForModels } from '../serve/systems.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const STARTUP_MS = 300_000;

export interface GroupModel {
  readonly group: string;
  /** Hugging Face layout: config.json, tokenizer files, onnx/model*.onnx. */
  readonly dir: string;
}

export const servedName = (group: string, backend: string): string => `${group}-${backend}`;

export function familyConfig(name: string, backend: string, maxNumSeqs: number): string {
  const parameter = (key: string, value: string | number): string => `parameters: { key: "${key}" value: { string_value: "${value}" } }`;
  return [
    `name: "${name}"`,
    'backend: "llm"',
    'max_batch_size: 0',
    'model_transaction_policy { decoupled: true }',
    'instance_group [ { count: 1 kind: KIND_CPU } ]',
    parameter('precision', 'fp32'),
    parameter('max_num_seqs', maxNumSeqs),
    parameter('attention_backend', backend),
    '',
  ].join('\n');
}

export interface ActiveServer {
  readonly group: string;
  readonly baseUrl: string;
  readonly pid: number;
  readonly tokenizer: PromptTokenizer;
}

export class GroupServers {
  private current: { active: ActiveServer; child: ChildServer; root: string } | undefined;
  private readonly starts = new Map<string, string>();

  constructor(
    private readonly models: ReadonlyMap<string, GroupModel>,
    private readonly backends: readonly string[],
    private readonly maxNumSeqs: number,
    private readonly log: (line: string) => void,
  ) {}

  /** The group's server, started (and warmed: two short requests per backend) if it is not the one running. */
  async use(group: string): Promise<ActiveServer> {
    if (this.current?.active.group === group) return this.current.active;
    await this.stop();
    const model = this.models.get(group);
    if (!model) throw new Error(`no model for ${group}`);
    const root = await mkdtemp(join(tmpdir(), 'conveyor-bench-families-'));
    for (const backend of this.backends) {
      const name = servedName(group, backend);
      await mkdir(join(root, name));
      await writeFile(join(root, name, 'config.pbtxt'), familyConfig(name, backend, this.maxNumSeqs));
      await symlink(resolve(model.dir), join(root, name, '1'), 'dir');
    }
    const args = ['--import', 'tsx', join(ROOT, 'src', 'cli.ts'), 'serve', '--model-repository', root, '--host', '127.0.0.1'];
    args.push('--http-port', '0', '--grpc-port', '0', '--metrics-port', '0', '--exit-timeout-secs', '2');
    this.log(`starting a server for ${group}…`);
    const started = performance.now();
    const child = await startChildServer({ args, cwd: ROOT, ready: conveyorListening, timeoutMs: STARTUP_MS });
    try {
      const names = this.backends.map((b) => servedName(group, b));
      await waitForModels(child.address, names, STARTUP_MS, () => /failed to load[^\n]*/.exec(child.tail())?.[0]);
      const tokenizer = await loadPromptTokenizer(model.dir);
      await warmUp(child.address, names, tokenizer);
    } catch (error) {
      await child.stop();
      await rm(root, { recursive: true, force: true });
      throw new Error(`${error instanceof Error ? error.message : String(error)}\n${child.tail()}`);
    }
    this.starts.set(group, `${((performance.now() - started) / 1000).toFixed(1)} s`);
    const active = { group, baseUrl: child.address, pid: child.pid, tokenizer: await loadPromptTokenizer(model.dir) };
    this.current = { active, child, root };
    this.log(`${group} served at ${child.address} (pid ${child.pid})`);
    return active;
  }

  /** Start-up and warm-up time per group, for the notes. */
  startTimes(): ReadonlyMap<string, string> {
    return this.starts;
  }

  async stop(): Promise<void> {
    const current = this.current;
    this.current = undefined;
    if (!current) return;
    await current.child.stop();
    await rm(current.root, { recursive: true, force: true });
  }
}

async function warmUp(baseUrl: string, names: readonly string[], tokenizer: PromptTokenizer): Promise<void> {
  const prompts = buildDataset({ kind: 'random', numPrompts: 2, inputLen: 16, outputLen: 4, rangeRatio: 0, prefixLen: 0, numPrefixes: 1, seed: 999_983 }, tokenizer);
  for (const model of names) {
    for (const prompt of prompts) {
      const output = await sendCompletion({ baseUrl, model }, prompt);
      if (!output.success) throw new Error(`warm-up of ${model} failed: ${output.error}`);
    }
  }
}
