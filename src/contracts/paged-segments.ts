// Where the segmented paged decoder lives beside its paged graph (models/qwen3/paged-segments.ts
// writes it, the repository resolves it, the runner opens it): model_paged.onnx →
// model_paged.segments/segment_00.onnx … segment_NN.onnx. models/common/model-files.ts mirrors
// these names (models/ may import only kernels/); test/unit/repository/variants.test.ts pins them.

const SEGMENTS_SUFFIX = '.segments';

/** The segments directory of a paged graph's file: model_paged_q4.onnx → model_paged_q4.segments. */
export function pagedSegmentsDir(pagedFile: string): string {
  return pagedFile.replace(/\.onnx$/, SEGMENTS_SUFFIX);
}

/** The paged graph a segments directory was cut from (the fallback where the native kernel is unavailable); null for any other path. */
export function pagedFileOfSegments(path: string): string | null {
  return path.endsWith(SEGMENTS_SUFFIX) ? `${path.slice(0, -SEGMENTS_SUFFIX.length)}.onnx` : null;
}

/**
 * The metadata_props key of segment i (< numLayers) where layer i has a sliding window: its size
 * in positions (models/qwen3/paged-segments.ts writes the same literal; the NativePagedRunner reads it).
 */
export const SLIDING_WINDOW_PROPERTY = 'conveyor.sliding_window';

/**
 * The metadata_props key of segment i (< numLayers): how layer i is wired, JSON of
 * SegmentLayerWiring (models/qwen3/paged-segments.ts writes it; src/runners/native-layers.ts reads
 * it to run segments 1 .. numLayers − 1 with the kernel's layer ops at a few rows). Segments
 * written before it existed lack it and always run in ONNX Runtime.
 */
export const DECODER_LAYER_PROPERTY = 'conveyor.decoder_layer';

/** A layer's wiring as the segment builder applies it (models/qwen3/config.ts's DecoderVariant, resolved for one layer). */
export interface SegmentLayerWiring {
  readonly norms: 'pre' | 'sandwich' | 'post';
  readonly qkNorm: 'none' | 'head' | 'projection';
  readonly activation: 'silu' | 'gelu_tanh';
  readonly rmsNormEps: number;
  /** q is multiplied by it after RoPE (the family's attention scale × √head_dim; 1 for the default). */
  readonly queryScale: number;
  /** null: the layer applies no RoPE. */
  readonly rope: { readonly inverseFrequencies: readonly number[]; readonly attentionFactor: number } | null;
}

/**
 * The metadata_props key of the last segment (numLayers): what it computes after the last
 * layer's attention, JSON of SegmentHeadWiring (models/qwen3/paged-segments.ts writes it;
 * src/runners/native-layers.ts reads it to run that segment with the kernel's layer ops at a
 * few rows). Segments written before it existed lack it and run it in ONNX Runtime.
 */
export const DECODER_HEAD_PROPERTY = 'conveyor.decoder_head';

/**
 * The metadata_props key of segment 0: its embedding lookup, JSON of SegmentEmbeddingWiring
 * (models/qwen3/paged-segments.ts writes it; src/runners/native-layers.ts reads it, with segment
 * 0's conveyor.decoder_layer, to run that segment with the kernel's layer ops at a few rows).
 */
export const DECODER_EMBEDDING_PROPERTY = 'conveyor.decoder_embedding';

/** Segment 0's lookup: rows of model.embed_tokens, times the multiplier (Gemma's √hidden; 1 for most). */
export interface SegmentEmbeddingWiring {
  readonly multiplier: number;
}

/** The last segment: the last layer's output half, the final norm and the lm_head. */
export interface SegmentHeadWiring {
  /** The last layer's wiring (its output half reads norms, activation and rmsNormEps). */
  readonly layer: SegmentLayerWiring;
  /** The initializer scope of the logits' table [vocab, hidden]: 'lm_head' where untied, else 'model.embed_tokens'. */
  readonly table: string;
  /** Logits are multiplied by it (Granite's 1 / logits_scaling; 1 for most). */
  readonly logitsMultiplier: number;
  /** Logits become cap · tanh(logits / cap) (Gemma's final soft cap); null: none. */
  readonly finalLogitSoftcap: number | null;
}

/** segment_00.onnx …: sorting the names sorts the segments. */
export const SEGMENT_FILE = /^segment_\d{2,}\.onnx$/;

export function segmentFileName(segment: number): string {
  return `segment_${String(segment).padStart(2, '0')}.onnx`;
}
