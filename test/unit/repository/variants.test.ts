// The server's precision → file table (src/repository/variants.ts) is the one the backends and
// the single-model loader read. models/ writes the test models under the same names but may
// import only kernels/, so it keeps its own table; this pins the two together.
import { describe, expect, it } from 'vitest';
import { VARIANT_FILE } from '../../../models/common/model-files.js';
import { PRECISION_VARIANTS, variantFile } from '../../../src/repository/variants.js';

describe('precision variants', () => {
  it('name the files the model builders write', () => {
    expect(Object.fromEntries(PRECISION_VARIANTS.map((v) => [v.precision, v.file]))).toEqual(VARIANT_FILE);
  });

  it('refuse an unknown precision, listing the choices', () => {
    expect(variantFile('fp16')).toBe('model_fp16.onnx');
    expect(() => variantFile('fp8')).toThrow("parameter precision must be one of fp32, fp16, int8, got 'fp8'");
  });
});
