// Which files of a Hub repository serving needs, from its file list alone (pure). An ONNX export
// (the onnx-community layout: onnx/model*.onnx with their _data files) gets the one variant
// --precision names (src/repository/variants.ts), or the first it has in the table's order; a
// safetensors checkpoint gets its weights and index, to be converted. Both get the config,
// generation and tokenizer files.

import { pagedSegmentsDir } from '../contracts/paged-segments.js';
import { ATTENTION_BACKENDS, pagedVariantFile, precisionVariant, PRECISION_VARIANTS, type AttentionBackend, type PrecisionVariant } from '../repository/variants.js';

/** Read by the tokenizer, the chat template and the engine; config.json and tokenizer.json are required. A download fetches them and `conveyor convert` copies them (its callers pass this list). */
export const MODEL_METADATA_FILES = [
  'config.json',
  'generation_config.json',
  'tokenizer.json',
  'tokenizer_config.json',
  'special_tokens_map.json',
  'chat_template.jinja',
  'chat_template.json',
  'vocab.json',
  'merges.txt',
  'added_tokens.json',
] as const;

const REQUIRED_FILES = ['config.json', 'tokenizer.json'] as const;

export interface ServingWants {
  /** --precision or the config's `precision` parameter; absent: the first variant the export has. */
  readonly precision?: string;
  readonly attentionBackend?: AttentionBackend;
}

/** ServingWants from parameter text: an attention backend outside the table is left to the llm backend to refuse. */
export function servingWants(precision: string | undefined, attentionBackend: string | undefined): ServingWants {
  const backend = ATTENTION_BACKENDS.find((b) => b === attentionBackend);
  return { ...(precision !== undefined ? { precision } : {}), ...(backend !== undefined ? { attentionBackend: backend } : {}) };
}

export type Selection =
  | { readonly kind: 'onnx'; readonly precision: PrecisionVariant['precision']; readonly modelFile: string; readonly files: readonly string[] }
  | { readonly kind: 'safetensors'; readonly precision: ConvertPrecision; readonly files: readonly string[] };

/** The precisions `conveyor convert` writes. */
export const CONVERT_PRECISIONS = ['fp32', 'fp16', 'int8', 'q4', 'q4f16'] as const;
export type ConvertPrecision = (typeof CONVERT_PRECISIONS)[number];

/** Thrown with what the repository lacks; the caller adds its name. */
export class SelectionError extends Error {
  constructor(
    readonly failure: 'file' | 'layout',
    message: string,
  ) {
    super(message);
  }
}

/** The Optimum files, or their paged graphs (and the segments directory beside each), that serve `variant` with `backend`, in the order the llm backend tries them. */
function servingCandidates(variant: PrecisionVariant, backend: AttentionBackend): string[] {
  if (backend === 'past_key_values') return variant.files.map((file) => `onnx/${file}`);
  return variant.files.map((file) => `onnx/${pagedVariantFile(file)}`);
}

/** What serving needs from a repository holding `paths`. */
export function selectFiles(paths: readonly string[], wants: ServingWants): Selection {
  const present = new Set(paths);
  const metadata = MODEL_METADATA_FILES.filter((file) => present.has(file));
  const hasOnnx = paths.some((path) => /^onnx\/model[^/]*\.onnx$/.test(path));
  const weights = paths.filter((path) => /^[^/]+\.safetensors$/.test(path));
  if (!hasOnnx && weights.length === 0) {
    throw new SelectionError('layout', `holds neither an ONNX export (onnx/model*.onnx) nor a safetensors checkpoint (*.safetensors)`);
  }
  const missing = REQUIRED_FILES.filter((file) => !present.has(file));
  if (missing.length > 0) throw new SelectionError('file', `has no ${missing.join(' or ')} (a model repository needs config.json and tokenizer.json)`);
  if (hasOnnx) return selectOnnx(paths, present, metadata, wants);
  const precision = convertPrecision(wants.precision);
  const index = present.has('model.safetensors.index.json') ? ['model.safetensors.index.json'] : [];
  return { kind: 'safetensors', precision, files: [...metadata, ...index, ...weights] };
}

function selectOnnx(paths: readonly string[], present: ReadonlySet<string>, metadata: readonly string[], wants: ServingWants): Selection {
  // Without an attention backend named, the llm backend runs a variant's paged graph where it has one, else its Optimum graph.
  const backends: readonly AttentionBackend[] = wants.attentionBackend ? [wants.attentionBackend] : ['paged', 'past_key_values'];
  const backendFileOf = (variant: PrecisionVariant): { backend: AttentionBackend; file: string } | undefined => {
    for (const backend of backends) {
      const file = servingCandidates(variant, backend).find((f) => present.has(f) || hasSegments(paths, f));
      if (file !== undefined) return { backend, file };
    }
    return undefined;
  };
  const fileOf = (variant: PrecisionVariant): string | undefined => backendFileOf(variant)?.file;
  const backend = wants.attentionBackend ?? 'past_key_values';
  let variant: PrecisionVariant;
  if (wants.precision === undefined) {
    const found = PRECISION_VARIANTS.find((v) => fileOf(v) !== undefined);
    if (!found) throw new SelectionError('file', `has no ${backend === 'past_key_values' ? '' : 'paged '}ONNX graph (onnx/ holds ${onnxFiles(paths)})`);
    variant = found;
  } else {
    variant = precisionVariant(wants.precision);
    if (fileOf(variant) === undefined) {
      throw new SelectionError('file', `has no ${servingCandidates(variant, backend).join(' or ')} for --precision ${wants.precision} (onnx/ holds ${onnxFiles(paths)})`);
    }
  }
  const { file: modelFile, backend: served } = backendFileOf(variant)!;
  // The graph's external data (model.onnx_data, model.onnx_data_1, …) and, for a paged graph, its segments.
  const segments = `${pagedSegmentsDir(modelFile)}/`;
  const companions = paths.filter((path) => path.startsWith(`${modelFile}_data`) || (served !== 'past_key_values' && path.startsWith(segments)));
  const files = [...metadata, ...(present.has(modelFile) ? [modelFile] : []), ...companions];
  return { kind: 'onnx', precision: variant.precision, modelFile, files };
}

const hasSegments = (paths: readonly string[], pagedFile: string): boolean => paths.some((path) => path.startsWith(`${pagedSegmentsDir(pagedFile)}/`));

function onnxFiles(paths: readonly string[]): string {
  const found = paths.filter((path) => /^onnx\/[^/]+\.onnx$/.test(path)).map((path) => path.slice('onnx/'.length));
  return found.length > 0 ? found.sort().join(', ') : 'no .onnx file';
}

/** The precision a checkpoint is converted to: fp32 unless --precision names one the converter writes. */
function convertPrecision(precision: string | undefined): ConvertPrecision {
  if (precision === undefined) return 'fp32';
  const canonical = precisionVariant(precision).precision;
  if (!(CONVERT_PRECISIONS as readonly string[]).includes(canonical)) {
    throw new SelectionError('file', `is a safetensors checkpoint, which conveyor convert writes as ${CONVERT_PRECISIONS.join(', ')}, not ${precision}`);
  }
  return canonical as ConvertPrecision;
}
