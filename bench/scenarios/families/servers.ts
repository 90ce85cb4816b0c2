// One Conveyor server at a time: a group's (a family's, or the baseline's) cases run back to back,
// and the first of them starts that group's server after stopping the previous one, so at most one
// model's weights and KV pool hold memory. The server's temporary repository has the model once
// per attention backend (`<group>-<backend>`, version directories linking the converted model).

import { sendCompletion } from '../serve/client.js';
import { type LinkedConveyor, startLinkedConveyor } from '../serve/conveyor-server.js';
import { buildDataset, loadPromptTokenizer, type PromptTokenizer } from '../serve/dataset.js';

const STARTUP_MS = 300_000;

export interface GroupModel {
  readonly group: string;
  /** Hugging Face layout: config.json, tokenizer files, onnx/model*.onnx. */
  readonly dir: string;
}

export const servedName = (group: string, backend: string): string => `${group}-${backend}`;

export interface ActiveServer {
  readonly group: string;
  readonly baseUrl: string;
  readonly pid: number;
  readonly tokenizer: PromptTokenizer;
}

export class GroupServers {
  private current: { active: ActiveServer; server: LinkedConveyor } | undefined;
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
    const models = this.backends.map((backend) => ({ name: servedName(group, backend), dir: model.dir, parameters: { max_num_seqs: this.maxNumSeqs, attention_backend: backend } }));
    const names = models.map((m) => m.name);
    this.log(`starting a server for ${group}…`);
    const started = performance.now();
    const server = await startLinkedConveyor({
      models,
      tmpPrefix: 'conveyor-bench-families-',
      timeoutMs: STARTUP_MS,
      afterLoad: async (child) => warmUp(child.address, names, await loadPromptTokenizer(model.dir)),
    });
    this.starts.set(group, `${((performance.now() - started) / 1000).toFixed(1)} s`);
    const { child } = server;
    const active = { group, baseUrl: child.address, pid: child.pid, tokenizer: await loadPromptTokenizer(model.dir) };
    this.current = { active, server };
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
    await current.server.stop();
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
