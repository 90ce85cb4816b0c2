import { describe, expect, it } from 'vitest';
import { parseServerOptions } from '../../../src/config/server-options.js';

describe('parseServerOptions', () => {
  it("uses Triton's defaults", () => {
    const o = parseServerOptions([]);
    expect(o).toMatchObject({ httpPort: 8000, grpcPort: 8001, metricsPort: 8002, vllmMetricNames: false, modelControlMode: 'none', strictReadiness: true, exitTimeoutSecs: 30 });
    expect(o.modelRepository.endsWith('models/repository')).toBe(true);
  });

  it("reads Triton's flag names", () => {
    const o = parseServerOptions(['--model-repository', '/tmp/r', '--http-port', '0', '--model-control-mode', 'explicit', '--load-model', 'a', '--load-model', 'b']);
    expect(o).toMatchObject({ modelRepository: '/tmp/r', httpPort: 0, modelControlMode: 'explicit', loadModels: ['a', 'b'] });
  });

  it('turns on the vllm: metric names', () => {
    expect(parseServerOptions(['--vllm-metric-names', 'true']).vllmMetricNames).toBe(true);
    expect(parseServerOptions(['--vllm-metric-names', 'false']).vllmMetricNames).toBe(false);
  });

  it('reads the OpenAI front end and --model flags', () => {
    const o = parseServerOptions(['--api-key', 'k1', '--api-key', 'k2', '--cors-allow-origin', 'https://a.example', '--max-queued-requests', '64', '--model', '/tmp/m', '--served-model-name', 'chat']);
    expect(o).toMatchObject({ apiKeys: ['k1', 'k2'], corsAllowOrigins: ['https://a.example'], maxQueuedRequests: 64, model: '/tmp/m', servedModelName: 'chat' });
    expect(parseServerOptions([])).toMatchObject({ apiKeys: [], corsAllowOrigins: [], maxQueuedRequests: 0 });
    expect(parseServerOptions([]).model).toBeUndefined();
  });

  it.each([
    [['--model', '/m', '--model-repository', '/r'], /--model and --model-repository are alternatives/],
    [['--served-model-name', 'x'], /--served-model-name needs --model/],
    [['--api-key', 'a b'], /--api-key must be non-empty/],
    [['--max-queued-requests', '1.5'], /--max-queued-requests must be a non-negative integer/],
    [['--http-port', '70000'], /--http-port must be a port number/],
    [['--vllm-metric-names', 'yes'], /--vllm-metric-names must be one of true, false/],
    [['--model-control-mode', 'sometimes'], /must be one of none, poll, explicit/],
    [['--load-model', 'a'], /needs --model-control-mode explicit/],
    [['--model-control-mode', 'explicit', '--load-model', '*', '--load-model', 'a'], /must be the only/],
    [['--repository-poll-secs', '0'], /must be a positive number/],
    [['--bogus'], /Unknown option '--bogus'/],
  ])('rejects %j', (argv, message) => {
    expect(() => parseServerOptions(argv)).toThrow(message);
  });
});
