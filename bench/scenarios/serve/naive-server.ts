// The naive baseline: the server a Node user would write in an afternoon. node:http, one request
// at a time (a promise chain: a request waits for every request before it to finish), each one
// straight through onnxruntime-node with a plain greedy loop, streamed back as OpenAI completions
// chunks, one per token. Nothing is batched, shared or overlapped; that is the point of it.
//
//   node --import tsx bench/scenarios/serve/naive-server.ts --model-dir DIR [--port 0] [--host 127.0.0.1] [--name NAME] [--threads N]
//
// Prints `naive server listening on http://HOST:PORT` once the model is loaded.

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { availableParallelism } from 'node:os';
import { basename, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import type { TextTokenizer } from '../../../src/contracts/tokenizer.js';
import { createTokenizer, modelInfo, readModelFiles } from '../../../src/tokenizer/model-files.js';
import { GreedyDecoder } from './naive-decoder.js';

export interface NaiveModel {
  readonly name: string;
  readonly tokenizer: TextTokenizer;
  readonly decoder: GreedyDecoder;
  readonly eosIds: ReadonlySet<number>;
}

interface CompletionParams {
  readonly promptIds: number[];
  readonly maxTokens: number;
  readonly stream: boolean;
  readonly includeUsage: boolean;
  readonly ignoreEos: boolean;
}

export async function loadNaiveModel(dir: string, name: string, threads: number): Promise<NaiveModel> {
  const files = await readModelFiles(dir);
  const tokenizer = createTokenizer(files);
  const decoder = await GreedyDecoder.load(join(dir, 'onnx', 'model.onnx'), threads);
  return { name, tokenizer, decoder, eosIds: new Set(modelInfo(files, tokenizer).eosTokenIds) };
}

/** The HTTP server; listen() is the caller's. */
export function naiveServer(model: NaiveModel) {
  let turn: Promise<void> = Promise.resolve();
  let nextId = 0;
  return createServer((req, res) => {
    if (req.method === 'GET' && (req.url === '/health' || req.url === '/v1/models')) {
      sendJson(res, 200, req.url === '/health' ? {} : { object: 'list', data: [{ id: model.name, object: 'model', owned_by: 'naive' }] });
      return;
    }
    if (req.method !== 'POST' || req.url !== '/v1/completions') {
      sendJson(res, 404, errorBody(`no route ${req.method} ${req.url}`));
      return;
    }
    void readBody(req).then((text) => {
      let params: CompletionParams;
      try {
        params = completionParams(JSON.parse(text), model.tokenizer);
      } catch (error) {
        sendJson(res, 400, errorBody((error as Error).message));
        return;
      }
      // Headers go out now so the client knows it was accepted; the tokens wait for its turn.
      if (params.stream) startStream(res);
      const id = `cmpl-naive-${nextId++}`;
      turn = turn.then(() => complete(model, id, params, res).catch((error: unknown) => failStream(res, error)));
    });
  });
}

function completionParams(body: Record<string, unknown>, tokenizer: TextTokenizer): CompletionParams {
  const prompt = body['prompt'];
  const promptIds = typeof prompt === 'string' ? tokenizer.encode(prompt, { add_special_tokens: true }).ids : Array.isArray(prompt) && prompt.every(Number.isInteger) ? (prompt as number[]) : null;
  if (promptIds === null || promptIds.length === 0) throw new Error('prompt must be a non-empty string or array of token ids');
  const maxTokens = body['max_tokens'] ?? 16;
  if (!Number.isInteger(maxTokens) || (maxTokens as number) < 1) throw new Error('max_tokens must be a positive integer');
  const options = body['stream_options'] as { include_usage?: unknown } | undefined;
  return { promptIds, maxTokens: maxTokens as number, stream: body['stream'] === true, includeUsage: options?.include_usage === true, ignoreEos: body['ignore_eos'] === true };
}

async function complete(model: NaiveModel, id: string, params: CompletionParams, res: ServerResponse): Promise<void> {
  const created = Math.floor(Date.now() / 1000);
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) => ({ id, object: 'text_completion', created, model: model.name, choices, ...extra });
  let gone = res.destroyed;
  res.once('close', () => (gone = true));
  const generated: number[] = [];
  let sent = '';
  let finish: 'length' | 'stop' = 'length';
  const stopIds = params.ignoreEos ? new Set<number>() : model.eosIds;
  for await (const token of model.decoder.generate(params.promptIds, params.maxTokens, stopIds, () => gone)) {
    generated.push(token);
    if (stopIds.has(token)) finish = 'stop';
    const last = generated.length === params.maxTokens || finish === 'stop';
    // Decode everything so far and send what is new; a trailing U+FFFD may be half a character.
    const text = model.tokenizer.decode(generated, { skip_special_tokens: true });
    const stable = last ? text : text.replace(/\uFFFD+$/, '');
    const delta = stable.startsWith(sent) ? stable.slice(sent.length) : '';
    if (delta !== '') sent = stable;
    if (params.stream) writeEvent(res, chunk([{ index: 0, text: delta, logprobs: null, finish_reason: last ? finish : null }]));
  }
  if (gone) return;
  const usage = { prompt_tokens: params.promptIds.length, completion_tokens: generated.length, total_tokens: params.promptIds.length + generated.length };
  if (!params.stream) {
    sendJson(res, 200, chunk([{ index: 0, text: sent, logprobs: null, finish_reason: finish }], { usage }));
    return;
  }
  if (params.includeUsage) writeEvent(res, chunk([], { usage }));
  res.end('data: [DONE]\n\n');
}

function startStream(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  res.flushHeaders();
}

function writeEvent(res: ServerResponse, payload: unknown): void {
  if (!res.destroyed) res.write(`data: ${JSON.stringify(payload)}\n\n`);
}

function failStream(res: ServerResponse, error: unknown): void {
  const message = error instanceof Error ? error.message : String(error);
  if (!res.headersSent) sendJson(res, 500, errorBody(message, 'server_error'));
  else if (!res.destroyed) res.end(`data: ${JSON.stringify(errorBody(message, 'server_error'))}\n\n`);
}

function errorBody(message: string, type = 'invalid_request_error') {
  return { error: { message, type, param: null, code: null } };
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    req.on('data', (part: Buffer) => parts.push(part));
    req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
    req.on('error', reject);
  });
}

async function main(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: { 'model-dir': { type: 'string' }, host: { type: 'string' }, port: { type: 'string' }, name: { type: 'string' }, threads: { type: 'string' } },
    strict: true,
  });
  const dir = values['model-dir'];
  if (!dir) throw new Error('--model-dir DIR is required');
  const model = await loadNaiveModel(dir, values.name ?? basename(dir), Number(values.threads ?? availableParallelism()));
  const server = naiveServer(model);
  const host = values.host ?? '127.0.0.1';
  server.listen(Number(values.port ?? 0), host, () => {
    const address = server.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    process.stdout.write(`naive server listening on http://${host}:${port}\n`);
  });
  const stop = (): void => void server.close(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main(process.argv.slice(2)).catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  });
}
