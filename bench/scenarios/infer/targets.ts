// A served model ready to be loaded: its metadata, its one request in both encodings (each sent
// once and checked before any timing, so a bad encoding fails here rather than measuring fast
// errors), and the cases that sweep it.

import type { BenchCase } from '../../harness/types.js';
import { grpcDriver, checkGrpcReply, inferOnce, type InferClient } from './load-grpc.js';
import { httpDriver } from './load-http.js';
import { pointLine, pointMetrics } from './metrics.js';
import { buildInputs, checkHttpResponse, grpcInferRequest, httpBinaryRequest, type ModelMetadata } from './payloads.js';
import type { PointKey } from './report.js';
import type { Variant } from './repository.js';
import { fetchStats } from './server-stats.js';
import { measureWindow, type LoadDriver, type WindowResult, type WindowTiming } from './window.js';

export type Protocol = 'http' | 'grpc';

export interface Target {
  readonly name: string;
  readonly variant: Variant;
  readonly drivers: Readonly<Record<Protocol, LoadDriver>>;
  /** One request over HTTP, awaited: see WindowHooks.settle. */
  readonly settle: () => Promise<void>;
  /** Inputs and outputs as checked, for the notes. */
  readonly description: string;
}

export interface Endpoints {
  readonly http: string;
  readonly client: InferClient;
}

export async function prepareTarget(endpoints: Endpoints, name: string, variant: Variant, freeDim: number): Promise<Target> {
  const response = await fetch(`${endpoints.http}/v2/models/${name}`);
  if (!response.ok) throw new Error(`metadata of ${name}: HTTP ${response.status} ${await response.text()}`);
  const metadata = (await response.json()) as ModelMetadata;
  const inputs = buildInputs(metadata, freeDim);
  const http = httpBinaryRequest(inputs);
  const url = `${endpoints.http}/v2/models/${name}/infer`;
  const send = async (): Promise<string> => {
    const reply = await fetch(url, { method: 'POST', body: http.body, headers: http.headers });
    return checkHttpResponse(reply.status, Buffer.from(await reply.arrayBuffer()), reply.headers.get('inference-header-content-length'), metadata);
  };
  const httpOutputs = await send();
  const grpcRequest = grpcInferRequest(name, inputs);
  checkGrpcReply(await inferOnce(endpoints.client, grpcRequest), metadata);
  const inputText = inputs.map((t) => `${t.name} ${t.datatype} [${t.shape.join(', ')}]`).join(', ');
  return {
    name,
    variant,
    drivers: { http: httpDriver(url, http), grpc: grpcDriver(endpoints.client, grpcRequest) },
    settle: async () => void (await send()),
    description: `${name}: inputs ${inputText} (${http.body.length} bytes as HTTP binary); outputs ${httpOutputs}`,
  };
}

export interface CaseSink {
  /** Latest metrics of a case, replaced after every measured window. */
  record(id: string, key: PointKey, variant: Variant, windows: readonly WindowResult[]): void;
  readonly log: (message: string) => void;
}

export function sweepCase(target: Target, key: PointKey & { protocol: Protocol }, timing: { warmupS: number } & WindowTiming, endpoints: Endpoints, sink: CaseSink): BenchCase {
  const group = `${key.family} ${key.protocol}`;
  const point = `c${key.concurrency}`;
  const id = `${group} ${target.variant} ${point}`;
  const windows: WindowResult[] = [];
  const hooks = { stats: () => fetchStats(endpoints.http, target.name), settle: target.settle };
  return {
    group,
    variant: target.variant,
    point,
    params: { family: key.family, protocol: key.protocol, concurrency: key.concurrency, model: target.name },
    run: async (slot) => {
      const warmup = slot?.warmup ?? false;
      const windowS = warmup ? timing.warmupS : timing.windowS;
      const result = await measureWindow(target.drivers[key.protocol], key.concurrency, { rampS: timing.rampS, windowS }, hooks);
      if (warmup) return;
      if (result.latenciesMs.length === 0) throw new Error(`no request completed in ${result.durationS.toFixed(1)} s${result.firstError ? ` (${result.firstError})` : ''}`);
      windows.push(result);
      sink.record(id, key, target.variant, windows);
      sink.log(pointLine(id, pointMetrics(windows)));
    },
  };
}
