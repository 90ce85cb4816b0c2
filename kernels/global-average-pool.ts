// Global average pooling: [N, C, H, W] → [N, C], the bridge from a CNN's feature maps to its
// classifier. Flatten rather than Reshape keeps the batch dimension symbolic without a Shape op.

import type { GraphBuilder } from './onnx/graph-builder.js';
import type { RefTensor } from './reference/tensor.js';

export function globalAveragePool(g: GraphBuilder, x: string): string {
  return g.op1('Flatten', [g.op1('GlobalAveragePool', [x])], { axis: 1 });
}

/** Float64 reference of globalAveragePool. */
export function globalAveragePoolReference(x: RefTensor): RefTensor {
  const [n, c] = x.dims as [number, number];
  const plane = x.data.length / (n * c);
  const out = new Float64Array(n * c);
  for (let i = 0; i < n * c; i++) {
    let sum = 0;
    for (let j = 0; j < plane; j++) sum += x.data[i * plane + j]!;
    out[i] = sum / plane;
  }
  return { dims: [n, c], data: out };
}
