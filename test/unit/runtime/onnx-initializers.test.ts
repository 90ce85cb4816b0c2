// readFloatInitializers (src/runtime/onnx-initializers.ts) on models the graph builder writes:
// weights inline and in an external data file, by name; other types, and names not asked for,
// absent; an external location outside the model's directory refused.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { GraphBuilder } from '../../../kernels/onnx/graph-builder.js';
import { readFloatInitializers } from '../../../src/runtime/onnx-initializers.js';

const dir = mkdtempSync(join(tmpdir(), 'conveyor-initializers-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A model with `big` (external when a sink is given) and `small` (inline) float weights and an int64 constant. */
function writeModelWithWeights(name: string, location: string | undefined): { big: Float32Array; small: Float32Array } {
  const chunks: Uint8Array[] = [];
  let offset = 0;
  const append = (bytes: Uint8Array): number => {
    chunks.push(bytes.slice());
    offset += bytes.length;
    return offset - bytes.length;
  };
  const sink = location === undefined ? undefined : { location, minBytes: 64, append };
  const g = new GraphBuilder('weights', 'float32', sink);
  const big = Float32Array.from({ length: 6 * 5 }, (_, i) => i * 0.25 - 3);
  const small = Float32Array.of(1.5, -2);
  const x = g.input('x', 'float32', [1, 6]);
  const y = g.op1('Add', [g.op1('MatMul', [x, g.weight('layer.big.weight', [6, 5], big)]), g.op1('Reshape', [g.weight('layer.small.weight', [2], small), g.ints([2, 1])])]);
  g.output(y, 'y', 'float32', [2, 5]);
  writeFileSync(join(dir, name), g.toModel().toBytes());
  if (location !== undefined && !location.startsWith('..')) writeFileSync(join(dir, location), Buffer.concat(chunks));
  return { big, small };
}

describe('readFloatInitializers', () => {
  it('reads inline and external float32 weights by name, with their dims', () => {
    const { big, small } = writeModelWithWeights('model.onnx', 'model.onnx_data');
    const found = readFloatInitializers(join(dir, 'model.onnx'), new Set(['layer.big.weight', 'layer.small.weight', 'layer.absent.weight']));
    expect([...found.keys()].sort()).toEqual(['layer.big.weight', 'layer.small.weight']);
    expect(found.get('layer.big.weight')).toEqual({ dims: [6, 5], data: big });
    expect(found.get('layer.small.weight')).toEqual({ dims: [2], data: small });
  });

  it('reads a model without external data, and leaves int64 constants out', () => {
    const { big } = writeModelWithWeights('inline.onnx', undefined);
    const found = readFloatInitializers(join(dir, 'inline.onnx'), new Set(['layer.big.weight', 'const_0']));
    expect([...found.keys()]).toEqual(['layer.big.weight']);
    expect(found.get('layer.big.weight')!.data).toEqual(big);
  });

  it("refuses external data outside the model's directory", () => {
    writeModelWithWeights('escaping.onnx', '../elsewhere.bin');
    expect(() => readFloatInitializers(join(dir, 'escaping.onnx'), new Set(['layer.big.weight']))).toThrow(/leaves the model's directory/);
  });
});
