import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS, LIMITS } from '../../../src/config/limits.js';
import { parseServerOptions, USAGE } from '../../../src/config/server-options.js';

/** A key file in a fresh temporary directory. */
function keyFile(text: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'conveyor-keys-')), 'keys.txt');
  writeFileSync(path, text);
  return path;
}

describe('parseServerOptions', () => {
  it("uses Triton's defaults", () => {
    const o = parseServerOptions([]);
    expect(o).toMatchObject({ httpPort: 8000, grpcPort: 8001, metricsPort: 8002, metricsEngineType: 'conveyor', modelControlMode: 'none', strictReadiness: true, exitTimeoutSecs: 30 });
    expect(o.modelRepository.endsWith('models/repository')).toBe(true);
  });

  it("reads Triton's flag names", () => {
    const o = parseServerOptions(['--model-repository', '/tmp/r', '--http-port', '0', '--model-control-mode', 'explicit', '--load-model', 'a', '--load-model', 'b']);
    expect(o).toMatchObject({ modelRepository: '/tmp/r', httpPort: 0, modelControlMode: 'explicit', loadModels: ['a', 'b'] });
  });

  it('turns on the vllm: metric names', () => {
    expect(parseServerOptions(['--vllm-metric-names', 'true']).metricsEngineType).toBe('vllm');
    expect(parseServerOptions(['--vllm-metric-names', 'false']).metricsEngineType).toBe('conveyor');
    expect(parseServerOptions(['--metrics-engine-type', 'vllm']).metricsEngineType).toBe('vllm');
    expect(parseServerOptions(['--metrics-engine-type', 'vllm', '--vllm-metric-names', 'true']).metricsEngineType).toBe('vllm');
  });

  it('reads the OpenAI front end and --model flags', () => {
    const o = parseServerOptions([
      '--api-key',
      'k1',
      '--api-key',
      'k2',
      '--cors-allow-origin',
      'https://a.example',
      '--max-queued-requests',
      '64',
      '--model',
      '/tmp/m',
      '--served-model-name',
      'chat',
      '--tool-call-parser',
      'hermes',
      '--reasoning-parser',
      'qwen3',
    ]);
    expect(o).toMatchObject({
      apiKeys: ['k1', 'k2'],
      corsAllowOrigins: ['https://a.example'],
      maxQueuedRequests: 64,
      model: '/tmp/m',
      servedModelName: 'chat',
      toolCallParser: 'hermes',
      reasoningParser: 'qwen3',
    });
    expect(parseServerOptions([])).toMatchObject({ apiKeys: [], corsAllowOrigins: [], maxQueuedRequests: 0 });
    expect(parseServerOptions([]).model).toBeUndefined();
  });

  it('reads API and admin keys from flags and key files, in order, without duplicates', () => {
    const apiFile = keyFile('# serving keys\nsk-f1\n\nsk-f2\nk1\n');
    const adminFile = keyFile('adm-f\n');
    const o = parseServerOptions(['--api-key', 'k1', '--api-key-file', apiFile, '--admin-key', 'adm', '--admin-key-file', adminFile]);
    expect(o).toMatchObject({ apiKeys: ['k1', 'sk-f1', 'sk-f2'], adminKeys: ['adm', 'adm-f'], authHealth: false, authMetrics: false });
    expect(parseServerOptions([])).toMatchObject({ apiKeys: [], adminKeys: [], authHealth: false, authMetrics: false });
  });

  it('turns on key checks for health and metrics', () => {
    expect(parseServerOptions(['--api-key', 'k', '--auth-health', 'true'])).toMatchObject({ authHealth: true, authMetrics: false });
    expect(parseServerOptions(['--admin-key', 'a', '--auth-metrics', 'true'])).toMatchObject({ authHealth: false, authMetrics: true });
  });

  it.each([
    [['--api-key-file', '/nonexistent/conveyor-keys'], /--api-key-file: cannot read '\/nonexistent\/conveyor-keys' \(ENOENT\)/],
    [['--api-key-file', keyFile('# nothing yet\n')], /--api-key-file '.*keys.txt' holds no keys/],
    [['--admin-key-file', keyFile('ok\nnot ok\n')], /--admin-key-file '.*keys.txt' line 2: the key contains whitespace/],
    [['--admin-key', ''], /--admin-key must be non-empty and without whitespace/],
    [['--api-key', 'same', '--admin-key', 'same'], /a key cannot be both an API key and an admin key/],
    [['--auth-health', 'true'], /--auth-health true needs a key to check/],
    [['--auth-metrics', 'true'], /--auth-metrics true needs a key to check/],
    [['--api-key', 'k', '--auth-health', 'yes'], /--auth-health must be one of true, false/],
  ])('rejects the access flags %j', (argv, message) => {
    expect(() => parseServerOptions(argv)).toThrow(message);
  });

  it('reads every resource limit from the limits table, with its default when absent', () => {
    expect(parseServerOptions([]).limits).toEqual(DEFAULT_LIMITS);
    expect(DEFAULT_LIMITS).toMatchObject({
      httpHeaderTimeoutSecs: 30,
      httpRequestTimeoutSecs: 120,
      httpMaxConnections: 2048,
      jsonMaxDepth: 64,
      maxPromptChars: 0,
      maxRequestSecs: 0,
      wsMaxGenerations: 16,
      grpcMaxMessageBytes: 2 ** 31 - 1,
    });
    const o = parseServerOptions([
      '--http-request-timeout-secs',
      '2.5',
      '--http-header-timeout-secs',
      '1',
      '--http-max-connections',
      '0',
      '--max-prompt-chars',
      '1000',
      '--ws-max-generations',
      '4',
      '--grpc-max-concurrent-streams',
      '8',
    ]);
    expect(o.limits).toMatchObject({ httpRequestTimeoutSecs: 2.5, httpHeaderTimeoutSecs: 1, httpMaxConnections: 0, maxPromptChars: 1000, wsMaxGenerations: 4, grpcMaxConcurrentStreams: 8 });
    for (const spec of Object.values(LIMITS)) expect(USAGE).toContain(spec.flag);
  });

  it.each([
    [['--http-max-connections=-1'], /--http-max-connections must be a non-negative integer, got '-1'/],
    [['--ws-max-generations', '0'], /--ws-max-generations must be a positive integer/],
    [['--json-max-depth', '1.5'], /--json-max-depth must be a positive integer/],
    [['--http-request-timeout-secs', 'soon'], /--http-request-timeout-secs must be a positive number/],
    [['--max-request-secs', ''], /--max-request-secs must be a non-negative number/],
    [['--compute-thread-nice', '20'], /--compute-thread-nice must be at most 19, got '20'/],
    [['--compute-thread-nice=-5'], /--compute-thread-nice must be a non-negative integer/],
    [['--http-header-timeout-secs', '10', '--http-request-timeout-secs', '5'], /must not exceed --http-request-timeout-secs/],
  ])('rejects the limit flags %j', (argv, message) => {
    expect(() => parseServerOptions(argv)).toThrow(message);
  });

  it.each([
    [['--model', '/m', '--model-repository', '/r'], /--model and --model-repository are alternatives/],
    [['--served-model-name', 'x'], /--served-model-name needs --model/],
    [['--tool-call-parser', 'hermes'], /--tool-call-parser needs --model/],
    [['--model', '/tmp/m', '--tool-call-parser', 'x" } }'], /--tool-call-parser must be a parser name/],
    [['--reasoning-parser', 'qwen3'], /--reasoning-parser needs --model/],
    [['--model', '/tmp/m', '--reasoning-parser', 'qwen3"'], /--reasoning-parser must be a parser name/],
    [['--api-key', 'a b'], /--api-key must be non-empty/],
    [['--max-queued-requests', '1.5'], /--max-queued-requests must be a non-negative integer/],
    [['--http-port', '70000'], /--http-port must be a port number/],
    [['--vllm-metric-names', 'yes'], /--vllm-metric-names must be one of true, false/],
    [['--metrics-engine-type', 'sglang'], /--metrics-engine-type must be one of conveyor, vllm/],
    [['--metrics-engine-type', 'conveyor', '--vllm-metric-names', 'true'], /contradicts --metrics-engine-type/],
    [['--model-control-mode', 'sometimes'], /must be one of none, poll, explicit/],
    [['--load-model', 'a'], /needs --model-control-mode explicit/],
    [['--model-control-mode', 'explicit', '--load-model', '*', '--load-model', 'a'], /must be the only/],
    [['--repository-poll-secs', '0'], /must be a positive number/],
    [['--bogus'], /Unknown option '--bogus'/],
  ])('rejects %j', (argv, message) => {
    expect(() => parseServerOptions(argv)).toThrow(message);
  });
});

describe('models on demand flags', () => {
  it('are off by default, with Ollama-like defaults', () => {
    expect(parseServerOptions([]).onDemand).toEqual({ enabled: false, loadTimeoutSecs: 300, maxLoadedModels: 0, maxLoadedModelBytes: 0, keepAliveMs: 300_000 });
  });

  it('read every flag', () => {
    const o = parseServerOptions([
      '--model-control-mode',
      'explicit',
      '--load-on-demand',
      'true',
      '--load-timeout-secs',
      '20',
      '--max-loaded-models',
      '2',
      '--max-loaded-model-bytes',
      '1000000',
      '--keep-alive=-1',
    ]);
    expect(o.onDemand).toEqual({ enabled: true, loadTimeoutSecs: 20, maxLoadedModels: 2, maxLoadedModelBytes: 1_000_000, keepAliveMs: Number.POSITIVE_INFINITY });
    expect(USAGE).toContain('--load-on-demand BOOL');
  });

  it.each([
    [['--load-on-demand', 'true'], /--load-on-demand true needs --model-control-mode explicit/],
    [['--keep-alive', 'soon'], /--keep-alive must be a duration/],
    [['--max-loaded-models=-1'], /--max-loaded-models must be a non-negative integer/],
    [['--load-timeout-secs', '0'], /--load-timeout-secs must be a positive number/],
  ])('rejects %j', (argv, message) => {
    expect(() => parseServerOptions(argv)).toThrow(message);
  });
});
