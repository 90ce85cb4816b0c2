// `npm run bench -- infer --pipelines`: the default repository's pipelines (text-embedder,
// image-classifier) run as ensembles in the server vs the same steps chained by the client
// (bench/scenarios/infer/client-steps.ts: tokenize or decode on the client, call bert-tiny or
// resnet-tiny, pool or take the top 5 on the client), over KServe HTTP with JSON and with binary
// tensors, at each concurrency. Both ways run through the same closed-loop driver (N loops of
// fetch), so the difference is the pipeline's place, not the load generator.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import sharp from 'sharp';
import { DEFAULT_REPOSITORY, ensureDefaultRepository } from '../../../models/default-repository.js';
import { formatMs, formatRate, markdownTable, type Align } from '../../harness/markdown.js';
import type { PreparedScenario, ScenarioContext } from '../../harness/scenario.js';
import type { BenchCase, CaseResult } from '../../harness/types.js';
import { IMAGE_SIZE, meanPool, preprocessImage, tokenizeForBert, topK } from './client-steps.js';
import { pointLine, pointMetrics, type PointMetrics } from './metrics.js';
import { chartsFor } from './report.js';
import { startServerProcess, type ServerProcess } from './server-process.js';
import { fetchStats } from './server-stats.js';
import { measureWindow, type LoadDriver, type WindowResult, type WindowTiming } from './window.js';

export const PIPELINES = ['text-embedder', 'image-classifier'] as const;
export const ENCODINGS = ['json', 'binary'] as const;
/** Where the pipeline's steps run: the ensemble in the server, or the client around the model. */
export const WAYS = ['server', 'client'] as const;
type Pipeline = (typeof PIPELINES)[number];
type Encoding = (typeof ENCODINGS)[number];
type Way = (typeof WAYS)[number];

const TEXT = 'Conveyor serves Triton ensembles: a tokenizer, an encoder and a pooling step in one request.';
/** The model a client-side chain calls, whose statistics its windows diff. */
const MODEL_OF: Record<Pipeline, string> = { 'text-embedder': 'bert-tiny', 'image-classifier': 'resnet-tiny' };

export interface PipelineConfig extends WindowTiming {
  readonly concurrency: readonly number[];
  readonly warmupS: number;
}

interface Tensor {
  readonly name: string;
  readonly datatype: 'BYTES' | 'INT64' | 'FP32';
  readonly shape: readonly number[];
  /** Binary layout (BYTES: 4-byte length prefixes). */
  readonly raw: Buffer;
  /** JSON `data` (BYTES: strings). */
  readonly json: readonly (number | string)[];
}

type Outputs = Map<string, { datatype: string; raw: Buffer | undefined; json: unknown[] | undefined }>;

const bytesTensor = (name: string, element: Buffer, jsonText: string): Tensor => ({
  name,
  datatype: 'BYTES',
  shape: [1, 1],
  raw: Buffer.concat([Buffer.from(new Uint32Array([element.byteLength]).buffer), element]),
  json: [jsonText],
});
const int64Tensor = (name: string, shape: readonly number[], data: BigInt64Array): Tensor => ({
  name,
  datatype: 'INT64',
  shape,
  raw: Buffer.from(data.buffer, data.byteOffset, data.byteLength),
  json: Array.from(data, Number),
});
const fp32Tensor = (name: string, shape: readonly number[], data: Float32Array): Tensor => ({
  name,
  datatype: 'FP32',
  shape,
  raw: Buffer.from(data.buffer, data.byteOffset, data.byteLength),
  json: Array.from(data),
});

/** One KServe infer over HTTP in the encoding, outputs as the client would read them. */
async function infer(http: string, model: string, inputs: readonly Tensor[], outputs: readonly string[], encoding: Encoding): Promise<Outputs> {
  const url = `${http}/v2/models/${model}/infer`;
  let response: Response;
  if (encoding === 'json') {
    const body = JSON.stringify({ inputs: inputs.map((t) => ({ name: t.name, datatype: t.datatype, shape: t.shape, data: t.json })), outputs: outputs.map((name) => ({ name })) });
    response = await fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
  } else {
    const header = Buffer.from(
      JSON.stringify({
        inputs: inputs.map((t) => ({ name: t.name, datatype: t.datatype, shape: t.shape, parameters: { binary_data_size: t.raw.byteLength } })),
        outputs: outputs.map((name) => ({ name, parameters: { binary_data: true } })),
      }),
    );
    response = await fetch(url, { method: 'POST', body: Buffer.concat([header, ...inputs.map((t) => t.raw)]), headers: { 'Inference-Header-Content-Length': String(header.byteLength) } });
  }
  const bytes = Buffer.from(await response.arrayBuffer());
  if (response.status !== 200) throw new Error(`${model}: HTTP ${response.status} ${bytes.toString('utf8').slice(0, 200)}`);
  const headerLength = Number(response.headers.get('inference-header-content-length') ?? bytes.byteLength);
  const json = JSON.parse(bytes.subarray(0, headerLength).toString('utf8')) as { outputs: { name: string; datatype: string; data?: unknown[]; parameters?: { binary_data_size?: number } }[] };
  const result: Outputs = new Map();
  let at = headerLength;
  for (const output of json.outputs) {
    const size = output.parameters?.binary_data_size;
    result.set(output.name, { datatype: output.datatype, raw: size === undefined ? undefined : bytes.subarray(at, at + size), json: output.data });
    at += size ?? 0;
  }
  return result;
}

const floatsOf = (output: { raw: Buffer | undefined; json: unknown[] | undefined } | undefined): Float32Array => {
  if (output?.raw) return new Float32Array(new Uint8Array(output.raw).buffer);
  if (output?.json) return Float32Array.from(output.json as number[]);
  throw new Error('an FP32 output is missing');
};

/** One request of the pipeline, done one way in one encoding; throws on a wrong answer. */
function requestFor(http: string, pipeline: Pipeline, way: Way, encoding: Encoding, image: Buffer, labels: readonly string[]): () => Promise<void> {
  if (pipeline === 'text-embedder') {
    if (way === 'server') {
      const input = bytesTensor('TEXT', Buffer.from(TEXT), TEXT);
      return async () => {
        if (floatsOf((await infer(http, pipeline, [input], ['EMBEDDING'], encoding)).get('EMBEDDING')).length !== 32) throw new Error('EMBEDDING is not [1, 32]');
      };
    }
    return async () => {
      const batch = await tokenizeForBert([TEXT]);
      const shape = [1, batch.width];
      const inputs = [int64Tensor('input_ids', shape, batch.inputIds), int64Tensor('attention_mask', shape, batch.attentionMask), int64Tensor('token_type_ids', shape, batch.tokenTypeIds)];
      const hidden = floatsOf((await infer(http, 'bert-tiny', inputs, ['last_hidden_state'], encoding)).get('last_hidden_state'));
      if (meanPool(hidden, batch.attentionMask, 1, batch.width)[0]!.length !== 32) throw new Error('the pooled embedding is not 32 wide');
    };
  }
  if (way === 'server') {
    const input = bytesTensor('IMAGE', image, image.toString('base64'));
    return async () => {
      if (floatsOf((await infer(http, pipeline, [input], ['LABELS', 'SCORES'], encoding)).get('SCORES')).length !== 5) throw new Error('SCORES is not [1, 5]');
    };
  }
  return async () => {
    const pixels = await preprocessImage(image);
    const logits = floatsOf((await infer(http, 'resnet-tiny', [fp32Tensor('input', [1, 3, IMAGE_SIZE, IMAGE_SIZE], pixels)], ['logits'], encoding)).get('logits'));
    if (topK(logits, labels).labels.length !== 5) throw new Error('top-5 is not 5 long');
  };
}

/** `concurrency` closed loops of `request`, each response's latency reported. */
function loopDriver(request: () => Promise<void>): LoadDriver {
  return (concurrency, onResponse) => {
    let stopped = false;
    const loop = async (): Promise<void> => {
      while (!stopped) {
        const started = performance.now();
        try {
          await request();
          if (!stopped) onResponse(performance.now() - started);
        } catch (error) {
          if (!stopped) onResponse(NaN, error instanceof Error ? error.message : String(error));
        }
      }
    };
    const loops = Array.from({ length: concurrency }, loop);
    return {
      stop: async () => {
        stopped = true;
        await Promise.all(loops);
      },
    };
  };
}

interface Measured {
  readonly pipeline: Pipeline;
  readonly encoding: Encoding;
  readonly concurrency: number;
  readonly way: Way;
  readonly metrics: PointMetrics;
}

export async function preparePipelines(config: PipelineConfig, context: ScenarioContext): Promise<PreparedScenario> {
  context.log('building the default repository…');
  await ensureDefaultRepository(DEFAULT_REPOSITORY, context.log);
  const labels = readFileSync(join(DEFAULT_REPOSITORY, 'resnet-tiny', 'labels.txt'), 'utf8').split('\n');
  // A camera-sized JPEG with some structure: the client decodes and resizes it as the server's step does.
  const width = 640;
  const height = 480;
  const pixels = Buffer.alloc(width * height * 3);
  for (let i = 0; i < pixels.length; i++) pixels[i] = (i * 7919) % 251;
  const image = await sharp(pixels, { raw: { width, height, channels: 3 } })
    .jpeg({ quality: 85 })
    .toBuffer();
  let server: ServerProcess | undefined;
  const dispose = async (): Promise<void> => void (await server?.stop());
  try {
    const loads = PIPELINES.flatMap((p) => ['--load-model', p]);
    context.log('starting the server on the default repository…');
    server = await startServerProcess(DEFAULT_REPOSITORY, 180_000, ['--model-control-mode', 'explicit', ...loads]);
    const http = server.http;
    const measured = new Map<string, Measured>();
    const cases: BenchCase[] = [];
    for (const pipeline of PIPELINES) {
      for (const encoding of ENCODINGS) {
        const requests = WAYS.map((way) => ({ way, request: requestFor(http, pipeline, way, encoding, image, labels) }));
        // Each way answers once before any timing, so a broken chain fails here.
        for (const { request } of requests) await request();
        for (const concurrency of config.concurrency) {
          for (const { way, request } of requests) {
            const id = `${pipeline} ${encoding} ${way} c${concurrency}`;
            const windows: WindowResult[] = [];
            const statsModel = way === 'server' ? pipeline : MODEL_OF[pipeline];
            const hooks = { stats: () => fetchStats(http, statsModel), settle: request };
            cases.push({
              group: `${pipeline} ${encoding}`,
              variant: way,
              point: `c${concurrency}`,
              params: { family: pipeline, protocol: encoding, concurrency, model: statsModel },
              run: async (slot) => {
                const warmup = slot?.warmup ?? false;
                const result = await measureWindow(loopDriver(request), concurrency, { rampS: config.rampS, windowS: warmup ? config.warmupS : config.windowS }, hooks);
                if (warmup) return;
                if (result.latenciesMs.length === 0) throw new Error(`no request completed in ${result.durationS.toFixed(1)} s${result.firstError ? ` (${result.firstError})` : ''}`);
                windows.push(result);
                const metrics = pointMetrics(windows);
                measured.set(id, { pipeline, encoding, concurrency, way, metrics });
                context.log(pointLine(id, metrics));
              },
            });
          }
        }
      }
    }
    return {
      cases,
      skipped: [],
      charts: chartsFor(PIPELINES, 'default repository'),
      notes: [
        `Server: \`src/cli.ts serve\` as a child process (pid ${server.pid}) over models/repository (the default repository), --model-control-mode explicit loading ${PIPELINES.join(' and ')} (and so their steps and bert-tiny / resnet-tiny).`,
        `server: one request to the ensemble (text-embedder: one ${TEXT.length}-character text; image-classifier: one ${width}×${height} JPEG of ${image.byteLength} bytes, base64 text in JSON). client: the same steps in the load generator's process (bench/scenarios/infer/client-steps.ts: bert-tiny's tokenizer and masked mean pooling; sharp's decode / resize / normalise and top-5) around one request to bert-tiny / resnet-tiny, tensors as JSON numbers or binary.`,
        "Load: N closed loops of fetch (undici) in one process for both ways, so the client-side steps share the load generator's event loop as a real client's would. Every request is batch 1. The server split is the statistics of the ensemble (server) or of the called model (client), diffed across the windows.",
      ],
      settings: { pipelines: true, concurrency: config.concurrency, windowS: config.windowS, warmupS: config.warmupS, rampS: config.rampS },
      conclude: (results) => concludePipelines(results, measured, config),
      dispose,
    };
  } catch (error) {
    await dispose();
    throw error;
  }
}

function concludePipelines(results: readonly CaseResult[], measured: ReadonlyMap<string, Measured>, config: PipelineConfig) {
  const metrics = new Map<string, Record<string, unknown>>();
  const find = (pipeline: Pipeline, encoding: Encoding, concurrency: number, way: Way): PointMetrics | undefined =>
    [...measured.values()].find((m) => m.pipeline === pipeline && m.encoding === encoding && m.concurrency === concurrency && m.way === way)?.metrics;
  for (const r of results) {
    const entry = measured.get(r.id);
    if (!entry) continue;
    const client = find(entry.pipeline, entry.encoding, entry.concurrency, 'client');
    const ratio = entry.way === 'server' && client ? { throughputVsClient: entry.metrics.throughput / client.throughput } : {};
    metrics.set(r.id, { family: entry.pipeline, protocol: entry.encoding, concurrency: entry.concurrency, variant: entry.way, ...entry.metrics, ...ratio });
  }
  const headers = ['Pipeline', 'Tensors', 'Conc.', 'Server req/s', 'Client-chained req/s', 'Server ÷ client', 'Server p99 ms', 'Client-chained p99 ms'];
  const align: Align[] = ['left', 'left', 'right', 'right', 'right', 'right', 'right', 'right'];
  const rows = PIPELINES.flatMap((pipeline) =>
    ENCODINGS.flatMap((encoding) =>
      config.concurrency.map((concurrency) => {
        const s = find(pipeline, encoding, concurrency, 'server');
        const c = find(pipeline, encoding, concurrency, 'client');
        const rate = (m: PointMetrics | undefined) => (m ? formatRate(m.throughput) : '–');
        const p99 = (m: PointMetrics | undefined) => (m ? formatMs(m.p99Ms) : '–');
        return [pipeline, encoding, String(concurrency), rate(s), rate(c), s && c ? `${(s.throughput / c.throughput).toFixed(2)}×` : '–', p99(s), p99(c)];
      }),
    ),
  );
  return { metrics, results: ['### Pipelines: in the server vs chained by the client', '', markdownTable(headers, rows, align), ''].join('\n') };
}
