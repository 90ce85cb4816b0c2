// The server's precision → file table (src/repository/variants.ts) is the one the backends and
// the single-model loader read. models/ writes the test models under the same names but may
// import only kernels/, so it keeps its own table; this pins the two together.
import { describe, expect, it } from 'vitest';
import { PAGED_SEGMENT_FILE, PAGED_VARIANT_FILE, VARIANT_FILE } from '../../../models/common/model-files.js';
import { pagedFileOfSegments, pagedSegmentsDir, SEGMENT_FILE, segmentFileName } from '../../../src/contracts/paged-segments.js';
import { PRECISION_NAMES, PRECISION_VARIANTS, pagedVariantFile, precisionOfFile, presentVariantFile, precisionVariant, servedVariant, variantFile } from '../../../src/repository/variants.js';

describe('precision variants', () => {
  it('name the files the model builders write', () => {
    for (const [precision, file] of Object.entries(VARIANT_FILE)) expect(variantFile(precision)).toBe(file);
  });

  it('name the paged graphs the model builders write beside them', () => {
    for (const [precision, file] of Object.entries(PAGED_VARIANT_FILE)) expect(pagedVariantFile(variantFile(precision))).toBe(file);
  });

  it('name the segmented paged decoders the model builders write beside the paged graphs, and read their precision', () => {
    for (const [precision, file] of Object.entries(PAGED_VARIANT_FILE)) {
      const segment3 = PAGED_SEGMENT_FILE(file, 3);
      expect(segment3).toBe(`${pagedSegmentsDir(file)}/${segmentFileName(3)}`);
      expect(SEGMENT_FILE.test(segmentFileName(3))).toBe(true);
      expect(pagedFileOfSegments(pagedSegmentsDir(file))).toBe(file);
      expect(precisionOfFile(`onnx/${pagedSegmentsDir(file)}`)).toBe(precision);
    }
    expect(pagedFileOfSegments('onnx/model_paged.onnx')).toBeNull();
  });

  it('accept the transformers.js dtype names and aliases, each naming the onnx-community file', () => {
    const files = Object.fromEntries(PRECISION_NAMES.map((name) => [name, variantFile(name)]));
    expect(files).toEqual({
      fp32: 'model.onnx',
      fp16: 'model_fp16.onnx',
      int8: 'model_quantized.onnx',
      q8: 'model_quantized.onnx',
      quantized: 'model_quantized.onnx',
      uint8: 'model_uint8.onnx',
      q4: 'model_q4.onnx',
      q4f16: 'model_q4f16.onnx',
      bnb4: 'model_bnb4.onnx',
    });
    expect(precisionVariant('q8').precision).toBe('int8');
    expect(PRECISION_VARIANTS.map((v) => v.precision)).toEqual(['fp32', 'fp16', 'int8', 'uint8', 'q4', 'q4f16', 'bnb4']);
  });

  it('load the first file of a variant the directory holds', async () => {
    const holding =
      (...present: string[]) =>
      async (file: string) =>
        present.includes(file);
    expect(await presentVariantFile('int8', holding('model_int8.onnx'))).toBe('model_int8.onnx');
    expect(await presentVariantFile('q8', holding('model_int8.onnx', 'model_quantized.onnx'))).toBe('model_quantized.onnx');
    // None there: the builders' name, which the loader's "not found" then reports.
    expect(await presentVariantFile('q4', holding('model.onnx'))).toBe('model_q4.onnx');
  });

  it('refuse an unknown precision, listing the choices', () => {
    expect(variantFile('fp16')).toBe('model_fp16.onnx');
    expect(() => variantFile('fp8')).toThrow("parameter precision must be one of fp32, fp16, int8, uint8, q4, q4f16, bnb4, q8, quantized, got 'fp8'");
    expect(() => variantFile('Q4')).toThrow(/got 'Q4'/);
  });

  it('read the precision back from the file a version loaded (what clients are shown)', () => {
    expect(precisionOfFile('model.onnx')).toBe('fp32');
    expect(precisionOfFile('onnx/model_quantized.onnx')).toBe('int8');
    expect(precisionOfFile('onnx/model_int8.onnx')).toBe('int8');
    expect(precisionOfFile('onnx/model_paged_q4.onnx')).toBe('q4');
    expect(precisionOfFile('onnx/model_paged.onnx')).toBe('fp32');
    expect(precisionOfFile('resnet50.onnx')).toBeNull();
    for (const v of PRECISION_VARIANTS) for (const file of v.files) expect(precisionOfFile(file)).toBe(v.precision);
    expect(servedVariant({ default_model_filename: 'model_fp16.onnx' })).toEqual({ precision: 'fp16', model_file: 'model_fp16.onnx' });
    expect(servedVariant({ default_model_filename: '' })).toEqual({ precision: 'fp32', model_file: 'model.onnx' });
    expect(servedVariant({ default_model_filename: 'resnet50.onnx' })).toEqual({ precision: 'custom', model_file: 'resnet50.onnx' });
  });
});
