// The response cache's key: every input byte, name, datatype and shape, the model version and
// load, the outputs asked for and the parameters that change the answer are in it; the order of
// the inputs and parameters that only change delivery are not.
import { describe, expect, it } from 'vitest';
import type { InferRequest } from '../../../src/contracts/infer.js';
import { ownCopies, requestCacheKey, responseBytes } from '../../../src/serving/response-cache-key.js';

const scope = { name: 'resnet', version: 1, generation: 1, outputs: ['probs', 'features'] };
const text = (s: string) => new TextEncoder().encode(s);

function request(edit: Partial<InferRequest> = {}): InferRequest {
  return {
    model: 'resnet',
    parameters: {},
    inputs: [
      { name: 'x', datatype: 'FP32', shape: [1, 3], data: new Float32Array([1, 2, 3]) },
      { name: 'ids', datatype: 'INT64', shape: [1, 2], data: new BigInt64Array([7n, 8n]) },
      { name: 's', datatype: 'BYTES', shape: [2], data: [text('ab'), text('c')] },
    ],
    ...edit,
  };
}
const key = (r: InferRequest, s = scope) => requestCacheKey(s, r);

describe('requestCacheKey', () => {
  it('is the same for the same request, whatever the order of its inputs or the id', () => {
    const r = request();
    expect(key(request())).toBe(key(r));
    expect(key({ ...r, inputs: [...r.inputs].reverse(), id: 'other' })).toBe(key(r));
    expect(key(r)).toMatch(/^[0-9a-f]{64}$/);
  });

  it('changes with every single byte of every input', () => {
    const base = key(request());
    const r = request();
    for (const [i, tensor] of r.inputs.entries()) {
      const arrays = Array.isArray(tensor.data) ? tensor.data : [new Uint8Array(tensor.data.buffer, tensor.data.byteOffset, tensor.data.byteLength)];
      for (const bytes of arrays) {
        for (let b = 0; b < bytes.length; b++) {
          bytes[b]! ^= 1;
          expect(key(r), `input ${i} byte ${b}`).not.toBe(base);
          bytes[b]! ^= 1;
        }
      }
    }
    expect(key(r)).toBe(base);
  });

  it('keeps BYTES elements apart: ["ab", "c"] is not ["a", "bc"]', () => {
    const split = (a: string, b: string) => request({ inputs: [{ name: 's', datatype: 'BYTES', shape: [2], data: [text(a), text(b)] }] });
    expect(key(split('ab', 'c'))).not.toBe(key(split('a', 'bc')));
  });

  it('changes with a name, datatype or shape, even over the same bytes', () => {
    const one = (name: string, datatype: 'INT32' | 'FP32', shape: number[]) => request({ inputs: [{ name, datatype, shape, data: new Int32Array([1, 2]) }] });
    const base = key(one('x', 'INT32', [1, 2]));
    expect(key(one('y', 'INT32', [1, 2]))).not.toBe(base);
    expect(key(one('x', 'FP32', [1, 2]))).not.toBe(base);
    expect(key(one('x', 'INT32', [2, 1]))).not.toBe(base);
  });

  it('changes with the model, version and load', () => {
    const r = request();
    expect(key(r, { ...scope, name: 'other' })).not.toBe(key(r));
    expect(key(r, { ...scope, version: 2 })).not.toBe(key(r));
    expect(key(r, { ...scope, generation: 2 })).not.toBe(key(r));
  });

  it('changes with the outputs asked for, their order and classification, not with binary_data', () => {
    const asked = (...outputs: InferRequest['outputs'] & object) => key(request({ outputs }));
    const all = key(request());
    const probs = asked({ name: 'probs', parameters: {} });
    expect(probs).not.toBe(all);
    expect(asked({ name: 'probs', parameters: { binary_data: true } })).toBe(probs);
    expect(asked({ name: 'probs', parameters: { classification: 3 } })).not.toBe(probs);
    expect(asked({ name: 'probs', parameters: { classification: 3 } })).not.toBe(asked({ name: 'probs', parameters: { classification: 5 } }));
    // Naming none asks for every output in the config's order, as naming them all does.
    expect(asked({ name: 'probs', parameters: { binary_data: true } }, { name: 'features', parameters: {} })).toBe(all);
    expect(asked({ name: 'features', parameters: {} }, { name: 'probs', parameters: {} })).not.toBe(all);
    const ab = asked({ name: 'a', parameters: {} }, { name: 'b', parameters: {} });
    expect(asked({ name: 'b', parameters: {} }, { name: 'a', parameters: {} })).not.toBe(ab);
  });

  it('changes with request parameters, except delivery and scheduling ones; a value keeps its type', () => {
    const base = key(request());
    expect(key(request({ parameters: { binary_data_output: true, priority: 2, timeout: 1000 } }))).toBe(base);
    expect(key(request({ parameters: { temperature: 1 } }))).not.toBe(base);
    expect(key(request({ parameters: { temperature: '1' } }))).not.toBe(key(request({ parameters: { temperature: 1 } })));
    expect(key(request({ parameters: { a: 1, b: 2 } }))).toBe(key(request({ parameters: { b: 2, a: 1 } })));
    expect(key(request({ parameters: { big: 5n } }))).not.toBe(base);
  });
});

describe('responseBytes and ownCopies', () => {
  it('weighs the tensor data with its names and shapes', () => {
    const outputs = [
      { name: 'p', datatype: 'FP32' as const, shape: [1, 4], data: new Float32Array(4) },
      { name: 'labels', datatype: 'BYTES' as const, shape: [2], data: [text('cat'), text('dog!')] },
    ];
    expect(responseBytes(outputs)).toBe(1 + 16 + 16 + 6 + 8 + (4 + 3) + (4 + 4));
  });

  it('copies data out of shared buffers, so a transfer of one cannot empty the other', () => {
    const body = new Float32Array([9, 1, 2, 9]);
    const view = { name: 'p', datatype: 'FP32' as const, shape: [2], data: body.subarray(1, 3) };
    const [copy] = ownCopies([view]);
    expect(copy!.data).toEqual(new Float32Array([1, 2]));
    expect((copy!.data as Float32Array).buffer.byteLength).toBe(8);
    structuredClone(body.buffer, { transfer: [body.buffer] });
    expect(copy!.data).toEqual(new Float32Array([1, 2]));
  });
});
