// Which model an HTTP request runs, read for its lease (src/server/kit/model-leases.ts).
import { describe, expect, it } from 'vitest';
import { leaseTarget } from '../../../../src/server/kit/model-leases.js';

describe('leaseTarget', () => {
  it('reads KServe run routes from the path', () => {
    expect(leaseTarget('/v2/models/:model/infer', { model: 'cnn' }, Buffer.from('{}'))).toEqual({ model: 'cnn' });
    expect(leaseTarget('/v2/models/:model/versions/:version/generate_stream', { model: 'llm', version: '1' }, undefined)).toEqual({ model: 'llm' });
  });

  it('reads OpenAI and Anthropic routes from the body, with keep_alive as sent', () => {
    expect(leaseTarget('/v1/chat/completions', {}, { model: 'qwen', keep_alive: '5m' })).toEqual({ model: 'qwen', keepAlive: '5m' });
    expect(leaseTarget('/v1/embeddings', {}, { model: 'bert' })).toEqual({ model: 'bert' });
    expect(leaseTarget('/v1/messages', {}, { model: 'qwen', keep_alive: null })).toEqual({ model: 'qwen' });
  });

  it('takes none for routes that run no model or bodies without one', () => {
    expect(leaseTarget('/v2/models/:model/config', { model: 'cnn' }, undefined)).toBeUndefined();
    expect(leaseTarget('/v1/models', {}, undefined)).toBeUndefined();
    expect(leaseTarget('/v1/chat/completions', {}, { model: 3 })).toBeUndefined();
    expect(leaseTarget('/v1/chat/completions', {}, 'text')).toBeUndefined();
    expect(leaseTarget(undefined, {}, { model: 'x' })).toBeUndefined();
  });
});
