import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { GraphBuilder } from '../../../kernels/onnx/graph-builder.js';
import { createSession } from '../../support/onnx.js';

describe('GraphBuilder.output', () => {
  it('renames a computed value instead of copying it, and later uses of the old name follow', async () => {
    const g = new GraphBuilder('rename');
    const x = g.input('x', 'float32', [2]);
    const doubled = g.op1('Add', [x, x]);
    g.output(doubled, 'doubled', 'float32', [2]);
    // Named after output(): must read the renamed value, not a dangling name.
    g.output(g.op1('Mul', [doubled, doubled]), 'squared', 'float32', [2]);
    // A second name for the same value, and a graph input as an output: each needs its own copy.
    g.output(doubled, 'doubled_again', 'float32', [2]);
    g.output(x, 'x_copy', 'float32', [2]);
    // Op types are the only capitalised "Identity" in the bytes (node names say "_identity").
    expect(new TextDecoder().decode(g.toModel().toBytes()).match(/Identity/g)).toHaveLength(2);

    const session = await createSession(g);
    expect(session.outputNames).toEqual(['doubled', 'squared', 'doubled_again', 'x_copy']);
    const out = await session.run({ x: new ort.Tensor('float32', Float32Array.from([1.5, -2]), [2]) });
    expect(Array.from(out.doubled!.data as Float32Array)).toEqual([3, -4]);
    expect(Array.from(out.squared!.data as Float32Array)).toEqual([9, 16]);
    expect(Array.from(out.doubled_again!.data as Float32Array)).toEqual([3, -4]);
    expect(Array.from(out.x_copy!.data as Float32Array)).toEqual([1.5, -2]);
  });
});
