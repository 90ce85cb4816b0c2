// The precision variants a model version may hold, declared once. The `precision` model
// parameter names one, and its file is what a backend loads; the names are those of Hugging Face
// / onnx-community exports and transformers.js' `dtype` (onnx/model.onnx, onnx/model_fp16.onnx,
// onnx/model_quantized.onnx, onnx/model_q4.onnx, ... for LLMs; the same names in the version
// directory for classic models).

import { pagedFileOfSegments } from '../contracts/paged-segments.js';
import { PRECISION_NAMES, PRECISION_VARIANTS, type Precision, type PrecisionVariant } from '../contracts/model-variants.js';
import { invalidArg } from '../errors.js';

export { ATTENTION_BACKENDS, type AttentionBackend, PRECISION_NAMES, PRECISION_VARIANTS, type Precision, type PrecisionVariant } from '../contracts/model-variants.js';

/** The variant `precision` (or one of its aliases) names; INVALID_ARG listing the choices for anything else. */
export function precisionVariant(precision: string): PrecisionVariant {
  const variant = PRECISION_VARIANTS.find((v) => v.precision === precision || (v.aliases as readonly string[]).includes(precision));
  if (!variant) throw invalidArg(`parameter precision must be one of ${PRECISION_NAMES.join(', ')}, got '${precision}'`);
  return variant;
}

/** The file Conveyor's builders write for `precision` (the variant's first name). */
export function variantFile(precision: string): string {
  return precisionVariant(precision).files[0];
}

/** The first of the variant's files that `exists`; its first file when none does (the caller's "not found" names it). */
export async function presentVariantFile(precision: string, exists: (file: string) => Promise<boolean>): Promise<string> {
  const { files } = precisionVariant(precision);
  for (const file of files) if (await exists(file)) return file;
  return files[0];
}

/** The paged graph's file for an Optimum variant file: model.onnx → model_paged.onnx, model_q4.onnx → model_paged_q4.onnx. */
export function pagedVariantFile(file: string): string {
  return file.replace(/^model(?=[_.])/, 'model_paged');
}

/** The precision a model file name declares: model_quantized.onnx → int8; null for a name outside the table. */
export function precisionOfFile(file: string): Precision | null {
  // The paged graph carries its Optimum file's precision (model_paged_q4.onnx is q4), and its segments its own.
  const base = (pagedFileOfSegments(file) ?? file)
    .split('/')
    .pop()!
    .replace(/^model_paged(?=[_.])/, 'model');
  return PRECISION_VARIANTS.find((v) => (v.files as readonly string[]).includes(base))?.precision ?? null;
}

/** What a precision that no table row names reads as: a file of the repository's own naming. */
export const CUSTOM_PRECISION = 'custom';

/**
 * The variant a loaded version runs, from its effective config (each backend names the file it
 * loaded in default_model_filename): what /v1/models, the index, model metadata and the metrics show.
 */
export function servedVariant(config: { readonly default_model_filename: string }, fallbackFile = 'model.onnx'): { precision: string; model_file: string } {
  const file = config.default_model_filename || fallbackFile;
  return { precision: precisionOfFile(file) ?? CUSTOM_PRECISION, model_file: file };
}
