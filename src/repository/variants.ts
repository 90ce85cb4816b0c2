// The precision variants a model version may hold, declared once. The `precision` model
// parameter names one, and its file is what a backend loads; the names are those of Hugging Face
// / onnx-community exports (onnx/model.onnx, onnx/model_fp16.onnx, onnx/model_quantized.onnx for
// LLMs; the same names in the version directory for classic models).

import { invalidArg } from '../errors.js';

/** In the order a directory with several variants and no `precision` prefers them. */
export const PRECISION_VARIANTS = [
  { precision: 'fp32', file: 'model.onnx' },
  { precision: 'fp16', file: 'model_fp16.onnx' },
  { precision: 'int8', file: 'model_quantized.onnx' },
] as const;

export type Precision = (typeof PRECISION_VARIANTS)[number]['precision'];

/** The file of the variant `precision` names; INVALID_ARG listing the choices for anything else. */
export function variantFile(precision: string): string {
  const variant = PRECISION_VARIANTS.find((v) => v.precision === precision);
  if (!variant) throw invalidArg(`parameter precision must be one of ${PRECISION_VARIANTS.map((v) => v.precision).join(', ')}, got '${precision}'`);
  return variant.file;
}
