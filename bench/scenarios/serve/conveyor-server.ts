// A Conveyor server (`src/cli.ts serve`) as a child process over a temporary repository whose
// version directories link to model directories the bench built: a config.pbtxt per served name
// (engine settings `serve --model DIR` has no flags for), the weights never copied. The serve
// scenario, the families scenario and the streaming scenario start their servers on it.

import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { messageOf } from '../../harness/runner.js';
import { startChildServer, type ChildServer } from './child-server.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

/** One served name: an llm model whose version 1 links to `dir`. */
export interface LinkedModel {
  readonly name: string;
  /** Hugging Face layout: config.json, tokenizer files, onnx/model*.onnx. */
  readonly dir: string;
  /** The llm backend's parameters beside precision fp32, in the order written (max_num_seqs, attention_backend, …). */
  readonly parameters: Readonly<Record<string, string | number>>;
}

/** config.pbtxt of a decoupled fp32 llm model on one CPU instance. */
export function llmConfig(name: string, parameters: LinkedModel['parameters']): string {
  const parameter = (key: string, value: string | number): string => `parameters: { key: "${key}" value: { string_value: "${value}" } }`;
  return [
    `name: "${name}"`,
    'backend: "llm"',
    'max_batch_size: 0',
    'model_transaction_policy { decoupled: true }',
    'instance_group [ { count: 1 kind: KIND_CPU } ]',
    parameter('precision', 'fp32'),
    ...Object.entries(parameters).map(([key, value]) => parameter(key, value)),
    '',
  ].join('\n');
}

/** Writes each model's directory (config.pbtxt, version 1 a link to its weights) under `root`. */
export async function writeLinkedRepository(root: string, models: readonly LinkedModel[]): Promise<void> {
  for (const model of models) {
    await mkdir(join(root, model.name));
    await writeFile(join(root, model.name, 'config.pbtxt'), llmConfig(model.name, model.parameters));
    await symlink(resolve(model.dir), join(root, model.name, '1'), 'dir');
  }
}

export interface LinkedConveyor {
  readonly child: ChildServer;
  /** Stops the server and removes its repository. */
  stop(): Promise<void>;
}

export interface LinkedConveyorSpec {
  readonly models: readonly LinkedModel[];
  /** The temporary repository's name prefix (under the OS temp directory). */
  readonly tmpPrefix: string;
  /** How long the start and each model's load may take. */
  readonly timeoutMs: number;
  /** Run once every model is listed (a warm-up); its failure fails the start like a load's. */
  readonly afterLoad?: (child: ChildServer) => Promise<void>;
}

/**
 * A Conveyor server serving `spec.models`, resolved once each is listed (and `afterLoad` is done);
 * on a failure the server is stopped, its repository removed, and the error carries the log's tail.
 */
export async function startLinkedConveyor(spec: LinkedConveyorSpec): Promise<LinkedConveyor> {
  const root = await mkdtemp(join(tmpdir(), spec.tmpPrefix));
  const removeRoot = () => rm(root, { recursive: true, force: true });
  let child: ChildServer;
  try {
    await writeLinkedRepository(root, spec.models);
    const args = ['--import', 'tsx', join(ROOT, 'src', 'cli.ts'), 'serve', '--model-repository', root, '--host', '127.0.0.1'];
    args.push('--http-port', '0', '--grpc-port', '0', '--metrics-port', '0', '--exit-timeout-secs', '2');
    child = await startChildServer({ args, cwd: ROOT, ready: conveyorListening, timeoutMs: spec.timeoutMs });
  } catch (error) {
    await removeRoot();
    throw error;
  }
  const stop = async (): Promise<void> => {
    await child.stop();
    await removeRoot();
  };
  try {
    // A model that failed to load says so in the log; no point waiting out the timeout then.
    const failed = (): string | undefined => /failed to load[^\n]*/.exec(child.tail())?.[0];
    await waitForModels(
      child.address,
      spec.models.map((m) => m.name),
      spec.timeoutMs,
      failed,
    );
    await spec.afterLoad?.(child);
  } catch (error) {
    await stop();
    throw new Error(`${messageOf(error)}\n${child.tail()}`);
  }
  return { child, stop };
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
