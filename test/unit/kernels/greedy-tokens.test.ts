// The greedy head (kernels/greedy-tokens.ts) against its reference — the sampler's argmax — on
// random rows full of ties (values drawn from a handful), −∞ entries, every sampleable bound from
// 1 to the whole row, positions repeated and out of order, none at all, and float16 logits.

import fc from 'fast-check';
import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { GREEDY_TOKENS, greedyTokens, greedyTokensReference } from '../../../kernels/greedy-tokens.js';
import { GraphBuilder } from '../../../kernels/onnx/graph-builder.js';
import { argmax } from '../../../src/sampler/select.js';
import { createSession } from '../../support/onnx.js';

const WIDTH = 37;

/** A head over `hidden` rows whose "lm_head" is the identity: the logits are the hidden rows themselves. */
async function head(floatType: 'float32' | 'float16'): Promise<ort.InferenceSession> {
  const g = new GraphBuilder('greedy_tokens', floatType);
  const hidden = g.input('hidden', floatType, ['num_tokens', WIDTH]);
  greedyTokens(g, hidden, (rows) => g.op1('Identity', [rows]));
  return createSession(g);
}

const int64 = (values: readonly number[]) => new ort.Tensor('int64', BigInt64Array.from(values, BigInt), [values.length]);

// A few values, so most rows have tied maxima; −∞ is a banned-looking entry.
const logit = fc.constantFrom(-3, -1, 0, 0.5, 2, 2, Number.NEGATIVE_INFINITY);
const inputs = fc.integer({ min: 1, max: 6 }).chain((rows) =>
  fc.record({
    rows: fc.constant(rows),
    values: fc.array(logit, { minLength: rows * WIDTH, maxLength: rows * WIDTH }),
    positions: fc.array(fc.integer({ min: 0, max: rows - 1 }), { maxLength: 8 }),
    sampleable: fc.integer({ min: 1, max: WIDTH }),
  }),
);

describe('greedyTokens', () => {
  it('picks the first maximum over [0, sampleable) of each named row, as the sampler does (float32 and float16)', async () => {
    const sessions = { float32: await head('float32'), float16: await head('float16') };
    await fc.assert(
      fc.asyncProperty(inputs, fc.constantFrom('float32' as const, 'float16' as const), async ({ rows, values, positions, sampleable }, type) => {
        const data = type === 'float32' ? Float32Array.from(values) : Uint16Array.from(values, toHalfBits);
        const out = await sessions[type].run({
          hidden: new ort.Tensor(type, data, [rows, WIDTH]),
          [GREEDY_TOKENS.indicesInput]: int64(positions),
          [GREEDY_TOKENS.sampleableInput]: int64([sampleable]),
        });
        const picked = Array.from(out[GREEDY_TOKENS.output]!.data as BigInt64Array, Number);
        const named = positions.flatMap((p) => values.slice(p * WIDTH, (p + 1) * WIDTH));
        expect(picked).toEqual(greedyTokensReference(named, WIDTH, sampleable));
        // The reference is the sampler's own argmax.
        expect(picked).toEqual(positions.map((p) => argmax(Float32Array.from(values.slice(p * WIDTH, (p + 1) * WIDTH)), sampleable)));
      }),
      { numRuns: 150 },
    );
  });
});

/** The float16 bits of the few values the property draws (all exact in float16). */
function toHalfBits(x: number): number {
  const bits: Record<string, number> = { '-3': 0xc200, '-1': 0xbc00, '0': 0x0000, '0.5': 0x3800, '2': 0x4000, '-Infinity': 0xfc00 };
  return bits[String(x)]!;
}
