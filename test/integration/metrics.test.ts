// /metrics on the metrics port of the real server, after real traffic: Triton's counters match
// the requests sent (failures by reason included), the pending gauge sees queued requests, the
// batch-size histogram sees every execution, workers report alive, and every number agrees with
// /v2/models/{m}/stats.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { configOf, makeRepository, startTestServer, type TestServer } from '../support/server.js';
import { parseExposition, type Exposition } from '../unit/metrics/exposition.js';

let server: TestServer;
const image = (batch: number, seed = 1) => Array.from({ length: batch * 3 * 224 * 224 }, (_, i) => Math.sin((i + seed) * 0.01));
const resnetBody = (batch: number, seed = 1) => ({ inputs: [{ name: 'input', datatype: 'FP32', shape: [batch, 3, 224, 224], data: image(batch, seed) }] });
const bertInputs = (ids: number[][]) =>
  ['input_ids', 'attention_mask', 'token_type_ids'].map((name) => ({
    name,
    datatype: 'INT64',
    shape: [ids.length, ids[0]!.length],
    data: ids.flat().map((id) => (name === 'input_ids' ? id : name === 'attention_mask' ? 1 : 0)),
  }));
const infer = (model: string, body: unknown, signal?: AbortSignal) => fetch(`${server.http}/v2/models/${model}/infer`, { method: 'POST', body: JSON.stringify(body), signal });
const scrape = async (): Promise<Exposition> => {
  const response = await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`);
  expect(response.status).toBe(200);
  return parseExposition(await response.text());
};
const stats = async (model: string) => (await (await fetch(`${server.http}/v2/models/${model}/stats`)).json()).model_stats[0];
const of = (model: string) => ({ model, version: '1' });
/** Scrapes until `check` holds and returns that scrape. */
function until(check: (m: Exposition) => boolean): Promise<Exposition> {
  return vi.waitFor(
    async () => {
      const m = await scrape();
      if (!check(m)) throw new Error('metrics never reached the expected state');
      return m;
    },
    { timeout: 30_000, interval: 100 },
  );
}

beforeAll(async () => {
  const batching = (policy: string) => (t: string) => t.replace(/dynamic_batching \{[\s\S]*?\n\}/, `dynamic_batching {\n${policy}\n}`);
  // The batch forms when 14 items are queued (12 + 2 below), however slowly the bodies arrive.
  const resnet = batching('  preferred_batch_size: [ 14 ]\n  max_queue_delay_microseconds: 10000000');
  const slowQueue = batching('  preferred_batch_size: [ 32 ]\n  max_queue_delay_microseconds: 2000000\n  default_queue_policy { max_queue_size: 2 }');
  const repository = await makeRepository([
    { name: 'resnet', from: 'resnet-tiny', config: configOf('resnet-tiny', 'resnet', (t) => resnet(t).replace('count: 1', 'count: 2')) },
    { name: 'bert', from: 'bert-tiny', config: configOf('bert-tiny', 'bert') },
    { name: 'resnet_queue', from: 'resnet-tiny', config: configOf('resnet-tiny', 'resnet_queue', slowQueue) },
  ]);
  server = await startTestServer(repository, ['--vllm-metric-names', 'true']);
}, 120_000);
afterAll(async () => server?.stop());

describe('metrics endpoint', () => {
  it('listens on its own port and says so', async () => {
    expect(server.metricsPort).not.toBe(server.httpPort);
    expect(server.logs).toContain(`Metrics listening on 127.0.0.1:${server.metricsPort}`);
    const m = await scrape();
    for (const model of ['resnet', 'bert', 'resnet_queue']) expect(m.value('nv_inference_request_success', of(model))).toBe(0);
    expect(m.types.get('nodejs_eventloop_lag_seconds')).toBe('gauge');
  });

  it('reports every instance worker alive', async () => {
    const m = await scrape();
    expect(m.all('conveyor_worker_alive', of('resnet')).map((s) => [s.labels.worker, s.value])).toEqual([
      ['0', 1],
      ['1', 1],
    ]);
    expect(m.value('conveyor_worker_alive', { ...of('bert'), worker: '0' })).toBe(1);
  });

  it('counts requests, inferences and executions as Triton does', async () => {
    const responses = await Promise.all([...Array.from({ length: 12 }, (_, i) => infer('resnet', resnetBody(1, i))), infer('resnet', resnetBody(2, 99))]);
    expect(responses.map((r) => r.status)).toEqual(Array(13).fill(200));
    const m = await scrape();
    expect(m.value('nv_inference_request_success', of('resnet'))).toBe(13);
    expect(m.value('nv_inference_count', of('resnet'))).toBe(14);
    expect(m.value('nv_inference_exec_count', of('resnet'))).toBe(1);
    expect(m.value('conveyor_inference_batch_size_count', of('resnet'))).toBe(1);
    expect(m.value('conveyor_inference_batch_size_sum', of('resnet'))).toBe(14);
    expect(m.value('conveyor_inference_batch_size_bucket', { ...of('resnet'), le: '8' })).toBe(0);
    expect(m.value('conveyor_inference_batch_size_bucket', { ...of('resnet'), le: '16' })).toBe(1);
    expect(m.value('nv_inference_request_duration_us', of('resnet'))).toBeGreaterThan(0);
    expect(m.value('nv_inference_pending_request_count', of('resnet'))).toBe(0);
  });

  it('labels a bad request OTHER', async () => {
    const response = await infer('bert', { inputs: bertInputs([[101, 102]]).slice(0, 2) });
    expect(response.status).toBe(400);
    const m = await scrape();
    expect(m.value('nv_inference_request_failure', { ...of('bert'), reason: 'OTHER' })).toBe(1);
    expect(m.value('nv_inference_request_success', of('bert'))).toBe(0);
  });

  it('sees queued requests pending, and labels a queue-full rejection REJECTED', async () => {
    const waiting = [infer('resnet_queue', resnetBody(1, 1)), infer('resnet_queue', resnetBody(1, 2))];
    const pending = await until((m) => m.value('nv_inference_pending_request_count', of('resnet_queue')) === 2);
    expect(pending.value('nv_inference_request_success', of('resnet_queue'))).toBe(0);
    const rejected = await infer('resnet_queue', resnetBody(1, 3));
    expect(rejected.status).toBe(503);
    expect((await Promise.all(waiting)).map((r) => r.status)).toEqual([200, 200]);
    const m = await scrape();
    expect(m.value('nv_inference_request_failure', { ...of('resnet_queue'), reason: 'REJECTED' })).toBe(1);
    expect(m.value('nv_inference_pending_request_count', of('resnet_queue'))).toBe(0);
    expect(m.value('nv_inference_request_success', of('resnet_queue'))).toBe(2);
    expect(m.value('nv_inference_exec_count', of('resnet_queue'))).toBe(1);
  });

  it('labels a request whose client went away while queued CANCELED', async () => {
    const controller = new AbortController();
    const request = infer('resnet_queue', resnetBody(1, 4), controller.signal).catch((e: Error) => e);
    await until((m) => m.value('nv_inference_pending_request_count', of('resnet_queue')) === 1);
    controller.abort();
    expect(await request).toBeInstanceOf(Error);
    const m = await until((s) => s.value('nv_inference_request_failure', { ...of('resnet_queue'), reason: 'CANCELED' }) === 1);
    expect(m.value('nv_inference_pending_request_count', of('resnet_queue'))).toBe(0);
  });

  it('agrees with /v2/models/{m}/stats for every model', async () => {
    for (const model of ['resnet', 'bert', 'resnet_queue']) {
      const s = await stats(model);
      const m = await scrape();
      const l = of(model);
      const us = (key: string) => Math.floor(s.inference_stats[key].ns / 1000);
      expect(m.value('nv_inference_request_success', l), model).toBe(s.inference_stats.success.count);
      expect(m.value('nv_inference_count', l), model).toBe(s.inference_count);
      expect(m.value('nv_inference_exec_count', l), model).toBe(s.execution_count);
      expect(
        m.all('nv_inference_request_failure', l).reduce((sum, x) => sum + x.value, 0),
        model,
      ).toBe(s.inference_stats.fail.count);
      expect(m.value('nv_inference_request_duration_us', l), model).toBe(us('success'));
      expect(m.value('nv_inference_queue_duration_us', l), model).toBe(us('queue'));
      expect(m.value('nv_inference_compute_input_duration_us', l), model).toBe(us('compute_input'));
      expect(m.value('nv_inference_compute_infer_duration_us', l), model).toBe(us('compute_infer'));
      expect(m.value('nv_inference_compute_output_duration_us', l), model).toBe(us('compute_output'));
      const executions = s.batch_stats.reduce((sum: number, b: { compute_infer: { count: number } }) => sum + b.compute_infer.count, 0);
      expect(m.value('conveyor_inference_batch_size_count', l), model).toBe(executions);
    }
  });

  it('declares the LLM families under conveyor: and, with --vllm-metric-names, vllm:', async () => {
    const m = await scrape();
    for (const name of [
      'time_to_first_token_seconds',
      'inter_token_latency_seconds',
      'e2e_request_latency_seconds',
      'num_requests_running',
      'kv_cache_usage_perc',
      'prompt_tokens_total',
      'request_success_total',
    ]) {
      expect(m.types.has(`conveyor:${name}`), name).toBe(true);
      expect(m.types.has(`vllm:${name}`), name).toBe(true);
    }
  });
});
