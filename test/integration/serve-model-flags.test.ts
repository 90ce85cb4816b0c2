// `conveyor serve --model DIR` with vLLM's serving flags, through the real CLI in a child process:
// --precision picks the file served (KServe model metadata, the load line), --max-model-len is the
// context served (a longer prompt gets OpenAI's 400), --max-num-seqs 1 is the scheduler's limit
// (never two running, the rest waiting, in /metrics). Startup refusals exit 2 with their message.
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_REPOSITORY } from '../../models/default-repository.js';
import { type CliServer, killCliServer, startCliServer } from '../support/cli-server.js';
import { parsePrometheusText } from '../support/prometheus-text.js';

/** The built tiny decoder: a Hugging Face export holding every precision variant. */
const EXPORT = join(DEFAULT_REPOSITORY, 'qwen3-tiny', '1');
const MODEL = 'tiny';
const MAX_MODEL_LEN = 256;

const root = await mkdtemp(join(tmpdir(), 'serve-model-flags-'));
let server: CliServer;

beforeAll(async () => {
  server = await startCliServer({ model: EXPORT }, [
    '--served-model-name',
    MODEL,
    '--precision',
    'int8',
    '--attention-backend',
    'past_key_values',
    '--max-model-len',
    String(MAX_MODEL_LEN),
    '--max-num-seqs',
    '1',
  ]);
}, 120_000);
afterAll(async () => {
  if (server) await killCliServer(server);
  await rm(root, { recursive: true, force: true });
});

async function json(path: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${server.http}${path}`, body === undefined ? {} : { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** `conveyor serve` run to its exit: the exit code and stderr. */
function serveExit(args: readonly string[]): Promise<{ code: number; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'serve', '--http-port', '0', '--grpc-port', '0', '--metrics-port', '0', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdout.resume();
  return new Promise((resolve) => child.on('close', (code) => resolve({ code: code ?? -1, stderr })));
}

describe('serve --model with vLLM flags', () => {
  it('--precision int8 serves model_quantized.onnx: the load line and the KServe model metadata say so', async () => {
    expect(server.lines.some((line) => line.msg === `${MODEL}:1: precision int8: loading onnx/model_quantized.onnx`)).toBe(true);
    const metadata = await json(`/v2/models/${MODEL}`);
    expect(metadata).toMatchObject({ status: 200, body: { name: MODEL, parameters: { precision: 'int8', model_file: 'onnx/model_quantized.onnx' } } });
  });

  it('without --tool-call-parser the parser is auto: the one the chat template shows, in the load log', async () => {
    expect(server.lines.some((line) => line.msg === `${MODEL}:1: tool_call_parser auto: hermes`)).toBe(true);
  });

  it("--max-model-len is the context served: the model card says it, and a longer request gets OpenAI's 400", async () => {
    const models = await json('/v1/models');
    expect(models.body['data']).toEqual([expect.objectContaining({ id: MODEL, max_model_len: MAX_MODEL_LEN })]);
    const tokens = (n: number) => Array.from({ length: n }, (_, i) => 100 + i);
    const long = await json('/v1/completions', { model: MODEL, prompt: tokens(MAX_MODEL_LEN + 10), max_tokens: 4 });
    expect(long).toEqual({
      status: 400,
      body: { error: { message: expect.stringContaining(`maximum context length is ${MAX_MODEL_LEN} tokens`), type: 'invalid_request_error', param: 'prompt', code: 'context_length_exceeded' } },
    });
    // Prompt + generated: a prompt that fits leaves only the rest of the context for max_tokens.
    const over = await json('/v1/completions', { model: MODEL, prompt: tokens(200), max_tokens: 100 });
    expect(over).toMatchObject({ status: 400, body: { error: { param: 'max_tokens', code: 'context_length_exceeded' } } });
    const fits = await json('/v1/completions', { model: MODEL, prompt: tokens(200), max_tokens: 56, ignore_eos: true });
    expect(fits).toMatchObject({ status: 200, body: { usage: { prompt_tokens: 200, completion_tokens: 56 } } });
  });

  it('--max-num-seqs 1 is the scheduler limit: one request runs while the others wait', async () => {
    const gauge = (families: ReturnType<typeof parsePrometheusText>, name: string): number => {
      const sample = families.get(name)?.samples.find((s) => s.labels['model_name'] === MODEL);
      if (!sample) throw new Error(`no ${name} series for ${MODEL}`);
      return sample.value;
    };
    const generations = Array.from({ length: 3 }, () => json('/v1/completions', { model: MODEL, prompt: 'Hello', max_tokens: 80, ignore_eos: true, temperature: 0 }));
    let done = false;
    const all = Promise.all(generations).finally(() => (done = true));
    const samples: { running: number; waiting: number }[] = [];
    while (!done) {
      const families = parsePrometheusText(await (await fetch(`${server.http}/metrics`)).text());
      // Each sample waits on its own scrape: the loop is paced by the server, not by a timer.
      samples.push({ running: gauge(families, 'conveyor:num_requests_running'), waiting: gauge(families, 'conveyor:num_requests_waiting') });
    }
    for (const { status, body } of await all) expect({ status, tokens: (body['usage'] as { completion_tokens: number }).completion_tokens }).toEqual({ status: 200, tokens: 80 });
    expect(Math.max(...samples.map((s) => s.running))).toBe(1);
    expect(Math.max(...samples.map((s) => s.waiting))).toBeGreaterThanOrEqual(1);
  });

  it('refuses at startup, exit 2: a precision the export lacks, a context past the model, a flag given with a repository', async () => {
    const partial = join(root, 'partial');
    await mkdir(join(partial, 'onnx'), { recursive: true });
    for (const file of ['config.json', 'tokenizer.json', 'onnx/model.onnx']) await writeFile(join(partial, file), '{}');
    const missing = await serveExit(['--model', partial, '--precision', 'q4']);
    expect(missing).toEqual({ code: 2, stderr: `--model ${partial}: --precision q4 needs onnx/model_q4.onnx, and onnx/ holds only model.onnx\n` });
    const tooLong = await serveExit(['--model', EXPORT, '--max-model-len', '5000']);
    expect(tooLong).toEqual({ code: 2, stderr: `--max-model-len 5000 exceeds the model's context length 4096 (config.json max_position_embeddings in ${EXPORT})\n` });
    const repository = await serveExit(['--model-repository', DEFAULT_REPOSITORY, '--max-num-seqs', '1']);
    expect(repository).toEqual({ code: 2, stderr: '--max-num-seqs needs --model (a repository model sets the max_num_seqs parameter in its config.pbtxt)\n' });
  }, 60_000);
});
