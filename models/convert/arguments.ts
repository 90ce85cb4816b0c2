// `conveyor convert <hf-dir> <out-dir> [--precision fp32|fp16|int8|q4|q4f16] [--paged]`: the command line
// as a pure parse, so its refusals are tested without a process.

import { parseArgs } from 'node:util';
import type { WeightPrecision } from '../../kernels/linear.js';
import { DECODER_PRECISIONS } from '../common/model-files.js';

export const CONVERT_USAGE = `conveyor convert <hf-dir> <out-dir> [options]
  Reads a Hugging Face checkpoint (config.json, *.safetensors or sharded with
  model.safetensors.index.json, F32/F16/BF16; LLaMA, Mistral, Qwen2, Qwen3, Gemma 3, Phi-3,
  SmolLM3, Granite, OLMo 2) and writes a
  directory \`conveyor serve --model <out-dir>\` serves (onnx/model*.onnx, config and tokenizer files).
  --precision P   fp32 | fp16 | int8 | q4 | q4f16 (default fp32): onnx/model.onnx, model_fp16.onnx, model_quantized.onnx, model_q4.onnx, model_q4f16.onnx
  --paged         also write the paged-attention graph on the same weights (onnx/model_paged.onnx, model_paged_fp16.onnx, ...),
                  which attention_backend=paged serves`;

export class ConvertUsageError extends Error {}

export interface ConvertArguments {
  readonly hfDir: string;
  readonly outDir: string;
  readonly precision: WeightPrecision;
  /** Also write the paged-attention graph (model_paged*.onnx). */
  readonly paged: boolean;
}

/** The parsed arguments, or undefined for --help; a ConvertUsageError says what is wrong. */
export function parseConvertArguments(argv: readonly string[]): ConvertArguments | undefined {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (error) {
    throw new ConvertUsageError(`${(error as Error).message}\n${CONVERT_USAGE}`);
  }
  const { values, positionals } = parsed;
  if (values.help) return undefined;
  const precision = values.precision ?? 'fp32';
  if (!DECODER_PRECISIONS.includes(precision as WeightPrecision)) throw new ConvertUsageError(`--precision ${precision}: expected one of ${DECODER_PRECISIONS.join(', ')}`);
  if (positionals.length !== 2) throw new ConvertUsageError(`expected <hf-dir> <out-dir>, got ${positionals.length} argument(s)\n${CONVERT_USAGE}`);
  const [hfDir, outDir] = positionals as [string, string];
  return { hfDir, outDir, precision: precision as WeightPrecision, paged: values.paged ?? false };
}

function parse(argv: readonly string[]) {
  return parseArgs({
    args: [...argv],
    allowPositionals: true,
    options: { precision: { type: 'string' }, paged: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
  });
}
