// vLLM's GET /tokenizer_info, and lm-evaluation-harness's remote tokenizer against it: the
// fields vLLM reports (tokenizer_config.json as transformers loads it, tokenizer_class, the chat
// template), compared with vLLM's own recipe run on transformers; then every call lm-eval's
// RemoteTokenizer and local-completions make, in their exact shapes (the support probe, encode
// without special tokens, the EOS id read by encoding eos_token, detokenize, the chat template
// rendered by jinja2 as RemoteTokenizer renders it, and the loglikelihood request on token ids); and
// lm-eval itself running a multiple-choice and a generation task of our own against the server,
// its scores checked against the server's own numbers (skipped, with the reason printed, where
// lm-eval does not install from the machine's wheel indexes).

import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_REPOSITORY } from '../../models/default-repository.js';
import { hfPython } from '../support/hf-python.js';
import { configOf, makeRepository, startTestServer, type TestServer } from '../support/server.js';

const run = promisify(execFile);
let server: TestServer;
const MODEL_DIR = join(DEFAULT_REPOSITORY, 'qwen3-tiny', '1');

beforeAll(async () => {
  const repository = await makeRepository([{ name: 'qwen3', from: 'qwen3-tiny', config: configOf('qwen3-tiny', 'qwen3') }]);
  server = await startTestServer(repository);
}, 120_000);
afterAll(async () => {
  await server?.stop();
});

async function getJson(path: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${server.http}${path}`);
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function postJson(path: string, body: object): Promise<Record<string, unknown>> {
  const response = await fetch(`${server.http}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  expect(response.status, path).toBe(200);
  return (await response.json()) as Record<string, unknown>;
}

describe('GET /tokenizer_info', () => {
  it("reports the tokenizer's configuration, class and chat template as vLLM does", async () => {
    const { status, body } = await getJson('/tokenizer_info');
    expect(status).toBe(200);
    expect(body).toMatchObject({ tokenizer_class: 'Qwen2Tokenizer', eos_token: '<|im_end|>', pad_token: '<|endoftext|>', bos_token: null, model_max_length: 131072 });
    expect(body.chat_template).toMatch(/^\{%- if tools %\}/);
    // AddedTokens are reported as their text; no file paths.
    expect((body.added_tokens_decoder as Record<string, unknown>)['151645']).toBe('<|im_end|>');
    for (const field of ['vocab_file', 'merges_file', 'tokenizer_file']) expect(body).not.toHaveProperty(field);
    // ?model= names the model when several are served; an unknown one is OpenAI's 404.
    expect((await getJson('/tokenizer_info?model=qwen3')).body).toEqual(body);
    const missing = await getJson('/tokenizer_info?model=nope');
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({ error: { code: 'model_not_found' } });
  });

  it("agrees with vLLM's recipe (the tokenizer's init_kwargs, AddedTokens as text, its class) run on transformers", async (ctx) => {
    const reference = await hfPython();
    if ('skip' in reference) {
      console.log(`skipped: ${reference.skip}`);
      ctx.skip();
      return;
    }
    const script = [
      'import json, sys',
      'from transformers import AutoTokenizer',
      't = AutoTokenizer.from_pretrained(sys.argv[1])',
      'def plain(o):',
      "    if hasattr(o, 'content'): return o.content",
      '    if isinstance(o, dict): return {str(k): plain(v) for k, v in o.items()}',
      '    if isinstance(o, list): return [plain(v) for v in o]',
      '    return o',
      'config = plain(dict(t.init_kwargs))',
      "config['tokenizer_class'] = type(t).__name__",
      'print(json.dumps(config, default=str))',
    ].join('\n');
    const { stdout } = await run(reference.python, ['-c', script, MODEL_DIR], { timeout: 120_000, maxBuffer: 64 << 20 });
    const expected = JSON.parse(stdout) as Record<string, unknown>;
    const { body } = await getJson('/tokenizer_info');
    // transformers 4 names the fast class `…Fast`; 5 has only fast tokenizers and drops the suffix.
    expect(String(expected.tokenizer_class).replace(/Fast$/, '')).toBe(body.tokenizer_class);
    const shared = [
      'eos_token',
      'bos_token',
      'pad_token',
      'unk_token',
      'added_tokens_decoder',
      'chat_template',
      'model_max_length',
      'clean_up_tokenization_spaces',
      'errors',
      'split_special_tokens',
      'add_prefix_space',
    ];
    for (const field of shared.filter((f) => f in expected)) expect(body[field], field).toEqual(expected[field]);
  }, 180_000);
});

describe("lm-evaluation-harness's remote tokenizer, call by call", () => {
  it("passes local-completions' support probe and RemoteTokenizer's encode / decode / EOS", async () => {
    // check_remote_tokenizer_support: /tokenizer_info carries eos_token, /tokenize answers a list.
    const { body: info } = await getJson('/tokenizer_info');
    expect(info).toHaveProperty('eos_token');
    const probe = await postJson('/tokenize', { prompt: 'test', add_special_tokens: false });
    expect(Array.isArray(probe.tokens)).toBe(true);
    // eos_token_id is the first id of eos_token encoded without special tokens: the model's EOS.
    const eos = (await postJson('/tokenize', { prompt: info.eos_token as string, add_special_tokens: false })).tokens as number[];
    expect(eos).toEqual([151645]);
    const text = 'The quick brown fox jumps over the lazy dog.';
    const tokens = (await postJson('/tokenize', { prompt: text, add_special_tokens: false })).tokens as number[];
    expect((await postJson('/detokenize', { tokens })).prompt).toBe(text);
  });

  it("renders the chat template with jinja2 as lm-eval does, to the server's own chat tokens", async (ctx) => {
    const reference = await hfPython();
    if ('skip' in reference) {
      console.log(`skipped: ${reference.skip}`);
      ctx.skip();
      return;
    }
    const { body: info } = await getJson('/tokenizer_info');
    const messages = [
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: 'Name a colour.' },
    ];
    // RemoteTokenizer's environment (BaseLoader, keep_trailing_newline), less its StrictUndefined:
    // Qwen3's template tests `tools`, which lm-eval does not pass, so it raises there whatever the server.
    const script = [
      'import json, sys',
      'from jinja2 import BaseLoader, Environment',
      'env = Environment(loader=BaseLoader, keep_trailing_newline=True)',
      'template, messages = json.loads(sys.stdin.read())',
      'print(json.dumps(env.from_string(template).render(messages=messages, add_generation_prompt=True)))',
    ].join('\n');
    const child = execFile(reference.python, ['-c', script], { timeout: 60_000 });
    child.stdin?.end(JSON.stringify([info.chat_template, messages]));
    const rendered = await new Promise<string>((resolveOut, reject) => {
      let out = '';
      child.stdout?.on('data', (chunk: string) => (out += chunk));
      child.on('error', reject);
      child.on('close', (code) => (code === 0 ? resolveOut(JSON.parse(out) as string) : reject(new Error(`jinja2 render exited ${code}`))));
    });
    const viaText = await postJson('/tokenize', { prompt: rendered, add_special_tokens: false });
    const viaChat = await postJson('/tokenize', { messages });
    expect(viaText.tokens).toEqual(viaChat.tokens);
  }, 60_000);

  it("answers local-completions' loglikelihood request on token ids (echo, logprobs 1, max_tokens 1)", async () => {
    const context = (await postJson('/tokenize', { prompt: 'The cat sat on the', add_special_tokens: false })).tokens as number[];
    const continuation = (await postJson('/tokenize', { prompt: ' mat', add_special_tokens: false })).tokens as number[];
    const answer = await postJson('/v1/completions', { model: 'qwen3', prompt: [[...context, ...continuation]], temperature: 0, max_tokens: 1, logprobs: 1, seed: 1234, echo: true });
    const [choice] = answer.choices as { logprobs: { token_logprobs: (number | null)[]; top_logprobs: (Record<string, number> | null)[] } }[];
    const all = context.length + continuation.length + 1;
    expect(choice!.logprobs.token_logprobs).toHaveLength(all);
    // lm-eval sums token_logprobs[ctxlen:-1] and compares each with the best of its top_logprobs.
    const scored = choice!.logprobs.token_logprobs.slice(context.length, -1);
    expect(scored).toHaveLength(continuation.length);
    for (const [i, logprob] of scored.entries()) {
      expect(logprob).toBeLessThanOrEqual(0);
      expect(Math.max(...Object.values(choice!.logprobs.top_logprobs[context.length + i]!))).toBeGreaterThanOrEqual(logprob!);
    }
  });
});

describe('lm-eval itself', () => {
  it("runs a multiple-choice and a generation task through local-completions with tokenizer_backend=remote, scoring with the server's own numbers", async (ctx) => {
    const lmEval = await lmEvalPython();
    if ('skip' in lmEval) {
      console.log(`skipped: ${lmEval.skip}`);
      ctx.skip();
      return;
    }
    if (lmEval.missing.length > 0) console.log(`lm-eval installed without ${lmEval.missing.join(', ')} (not in the wheel index; the API model path does not import them)`);
    // Our own three-question task, as a user's local task folder: a JSON Lines dataset and two task files.
    const tasks = await mkdtemp(join(tmpdir(), 'conveyor-lm-eval-'));
    const docs = [
      { question: 'The cat sat on the', choices: ['mat', 'moon', 'idea'], label: 0 },
      { question: 'Two plus two is', choices: ['four', 'five', 'blue'], label: 0 },
      { question: 'The sky is', choices: ['blue', 'loud', 'square'], label: 1 },
    ];
    const data = join(tasks, 'data.jsonl');
    await writeFile(data, docs.map((doc) => JSON.stringify(doc)).join('\n'));
    const common = ['dataset_path: json', 'dataset_kwargs:', `  data_files: ${data}`, 'test_split: train', 'doc_to_text: "{{question}}"'];
    await writeFile(
      join(tasks, 'mc.yaml'),
      [...common, 'task: conveyor_mc', 'output_type: multiple_choice', 'doc_to_choice: "{{choices}}"', 'doc_to_target: label', 'metric_list:', '  - metric: acc'].join('\n'),
    );
    await writeFile(
      join(tasks, 'gen.yaml'),
      [
        ...common,
        'task: conveyor_gen',
        'output_type: generate_until',
        'doc_to_target: "{{choices[0]}}"',
        'generation_kwargs:',
        '  until: ["\\n"]',
        '  do_sample: false',
        `  max_gen_toks: ${GEN_TOKENS}`,
        'metric_list:',
        '  - metric: exact_match',
      ].join('\n'),
    );
    const script = [
      'import json, sys',
      'from lm_eval import simple_evaluate',
      'from lm_eval.tasks import TaskManager',
      "args = f'base_url={sys.argv[1]},model=qwen3,tokenizer_backend=remote,tokenized_requests=True,num_concurrent=2,max_retries=1'",
      "out = simple_evaluate(model='local-completions', model_args=args, tasks=['conveyor_mc', 'conveyor_gen'], task_manager=TaskManager(include_path=sys.argv[2]), log_samples=True)",
      "samples = {task: [{'arguments': s['arguments'], 'filtered_resps': s['filtered_resps']} for s in rows] for task, rows in out['samples'].items()}",
      "print(json.dumps({'results': out['results'], 'samples': samples}, default=str))",
    ].join('\n');
    const { stdout } = await run(lmEval.python, ['-c', script, `${server.http}/v1/completions`, tasks], {
      timeout: 300_000,
      maxBuffer: 64 << 20,
      env: { ...process.env, HF_HUB_OFFLINE: '1', HF_DATASETS_OFFLINE: '1', HF_DATASETS_CACHE: join(tasks, 'cache') },
    });
    await rm(tasks, { recursive: true, force: true });
    const result = JSON.parse(stdout.trim().split('\n').at(-1)!) as LmEvalOutput;

    // Multiple choice: each choice's loglikelihood is what the server scores for it, and acc follows.
    const mc = result.samples['conveyor_mc']!;
    let correct = 0;
    for (const [i, sample] of mc.entries()) {
      const scores = (sample.filtered_resps as [number, boolean][]).map(([loglikelihood]) => loglikelihood);
      for (const [j, [context, continuation]] of sample.arguments.entries()) expect(scores[j]).toBeCloseTo(await serverLoglikelihood(context, continuation), 3);
      if (scores.indexOf(Math.max(...scores)) === docs[i]!.label) correct++;
    }
    expect(result.results['conveyor_mc']!['acc,none']).toBeCloseTo(correct / docs.length, 6);
    // Generation: greedy text up to the first newline, as the server completes the same prompt.
    for (const sample of result.samples['conveyor_gen']!) {
      const completion = await postJson('/v1/completions', { model: 'qwen3', prompt: sample.arguments[0]![0], max_tokens: GEN_TOKENS, temperature: 0 });
      const text = (completion.choices as { text: string }[])[0]!.text;
      expect(sample.filtered_resps[0]).toBe(text.split('\n')[0]);
    }
  }, 900_000);
});

const GEN_TOKENS = 8;

interface LmEvalOutput {
  readonly results: Record<string, Record<string, number>>;
  readonly samples: Record<string, LmEvalSample[]>;
}

interface LmEvalSample {
  readonly arguments: [string, string][];
  /** Per choice [loglikelihood, is_greedy] for multiple choice; the generated text for generation. */
  readonly filtered_resps: unknown[];
}

/** The continuation's log-probability given the context, read from the server's echoed prompt logprobs (tokens split as lm-eval splits them). */
async function serverLoglikelihood(context: string, continuation: string): Promise<number> {
  const tokens = async (prompt: string) => (await postJson('/tokenize', { model: 'qwen3', prompt, add_special_tokens: false })).tokens as number[];
  const whole = await tokens(context + continuation);
  const contextLength = (await tokens(context)).length;
  const completion = await postJson('/v1/completions', { model: 'qwen3', prompt: whole, max_tokens: 1, echo: true, logprobs: 1, temperature: 0 });
  const logprobs = (completion.choices as { logprobs: { token_logprobs: (number | null)[] } }[])[0]!.logprobs.token_logprobs;
  return logprobs.slice(contextLength, whole.length).reduce<number>((sum, logprob) => sum + logprob!, 0);
}

/**
 * Where the model path's imports come from. lm-eval's wheel is in the machine's second local
 * index, but its `evaluate`, `rouge-score`, `sqlitedict`, `word2number` and `pytablewriter` are in
 * neither: where the full install fails, lm-eval goes in without dependencies beside the ones the
 * API model path and its evaluator import, and the test says which were left out.
 */
const LM_EVAL_RUNTIME = ['datasets', 'numpy', 'jinja2', 'sacrebleu', 'dill', 'more_itertools', 'typing_extensions', 'tqdm', 'requests', 'aiohttp', 'tenacity'];
/** lm-eval's declared dependencies that neither index has, by their import names. */
const LM_EVAL_UNINDEXED = ['evaluate', 'rouge_score', 'sqlitedict', 'word2number', 'pytablewriter'];

/** A venv with lm-eval from the machine's local wheel indexes (node_modules/.cache), or why there is none. */
async function lmEvalPython(): Promise<{ python: string; missing: string[] } | { skip: string }> {
  const indexes = ['/opt/pypi/simple', '/opt/pypi-more/simple'].filter((index) => existsSync(index));
  const indexArgs = indexes.flatMap((index, i) => [i === 0 ? '--index-url' : '--extra-index-url', `file://${index}`]);
  const dir = resolve('node_modules/.cache/conveyor-lm-eval-venv');
  const python = join(dir, 'bin', 'python');
  const probe = `import importlib.util, json, lm_eval.evaluator, lm_eval.models.openai_completions; print(json.dumps([m for m in ${JSON.stringify(LM_EVAL_UNINDEXED)} if importlib.util.find_spec(m) is None]))`;
  const ready = async (): Promise<string[] | null> =>
    existsSync(python)
      ? await run(python, ['-c', probe], { timeout: 120_000 })
          .then(({ stdout }) => JSON.parse(stdout.trim()) as string[])
          .catch(() => null)
      : null;
  const before = await ready();
  if (before) return { python, missing: before };
  const pip = (...args: string[]) => run(python, ['-m', 'pip', 'install', '--quiet', ...indexArgs, ...args], { timeout: 900_000, maxBuffer: 64 << 20 });
  try {
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true });
    await run('python3', ['-m', 'venv', dir], { timeout: 120_000 });
    await pip('lm-eval').catch(async () => {
      await pip('--no-deps', 'lm-eval');
      await pip(...LM_EVAL_RUNTIME);
    });
    const after = await ready();
    if (after) return { python, missing: after };
    return { skip: 'lm-eval installed but its evaluator or API models do not import' };
  } catch (error) {
    const text = error instanceof Error ? (error as { stderr?: string }).stderr || error.message : String(error);
    await rm(dir, { recursive: true, force: true });
    return { skip: `lm-eval does not install from ${indexes.join(' + ') || 'the default index'}: ${text.trim().split('\n').at(-1) ?? text}` };
  }
}
