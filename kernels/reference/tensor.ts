// Float64 reference tensors: the plain arrays the kernels' reference implementations use.

export interface RefTensor {
  readonly dims: readonly number[];
  readonly data: Float64Array;
}

export function refTensor(dims: readonly number[], data?: ArrayLike<number>): RefTensor {
  const size = dims.reduce((a, b) => a * b, 1);
  const values = data ? Float64Array.from(data) : new Float64Array(size);
  if (values.length !== size) throw new Error(`refTensor: ${values.length} values for dims [${dims}]`);
  return { dims: [...dims], data: values };
}

/** Row-major strides. */
export function strides(dims: readonly number[]): number[] {
  const out = new Array<number>(dims.length).fill(1);
  for (let i = dims.length - 2; i >= 0; i--) out[i] = out[i + 1]! * dims[i + 1]!;
  return out;
}

/** y[..., n] = x[..., k] · w[k, n] (w stored [k, n] row-major). */
export function refMatMul(x: RefTensor, w: RefTensor): RefTensor {
  const k = w.dims[0]!;
  const n = w.dims[1]!;
  const rows = x.data.length / k;
  const out = new Float64Array(rows * n);
  for (let r = 0; r < rows; r++) {
    for (let i = 0; i < k; i++) {
      const xv = x.data[r * k + i]!;
      if (xv === 0) continue;
      for (let j = 0; j < n; j++) out[r * n + j]! += xv * w.data[i * n + j]!;
    }
  }
  return { dims: [...x.dims.slice(0, -1), n], data: out };
}
