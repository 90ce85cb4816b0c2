// RoPE as a checkpoint's config.json declares it, for one layer type, as transformers computes it
// (modeling_rope_utils.py): θ_i for each rotated pair and the factor on cos / sin. The caller
// hands over one parameter dict, already gathered from either layout transformers writes (≥ 5's
// `rope_parameters`, 4.x's `rope_theta` + `rope_scaling`); every key in it is either read here or
// listed as not changing the math, so a parameter this code does not understand is refused by
// name, never dropped.

import { inverseFrequencies } from '../../kernels/rotary-embedding.js';
import type { LayerRope } from '../qwen3/config.js';

export class RopeScalingError extends Error {}

/** The facts of the model a RoPE type reads besides its own parameters. */
export interface RopeContext {
  readonly headDim: number;
  readonly maxPositionEmbeddings: number;
  /** Phi-3's top-level original_max_position_embeddings, which transformers prefers to the dict's. */
  readonly originalMaxPositionEmbeddings?: number;
  /** Where the error messages say the parameters came from (e.g. `rope_parameters.full_attention`). */
  readonly source: string;
}

export interface ResolvedRope {
  readonly rope: LayerRope;
  /** The longest context this RoPE is computed for here; the served context is capped to it. */
  readonly maxContext?: number;
  readonly notes: readonly string[];
}

/** Keys every type may carry: its name (both spellings), θ, and the rotated fraction of a head. */
const COMMON_KEYS = ['rope_type', 'type', 'rope_theta', 'partial_rotary_factor'];

interface RopeType {
  readonly keys: readonly string[];
  resolve(p: Params, dim: number, context: RopeContext): ResolvedRope;
}

/** One type's parameter dict with typed, named reads. */
class Params {
  constructor(
    readonly raw: Record<string, unknown>,
    private readonly where: string,
  ) {}
  positive(key: string, fallback?: number): number {
    const value = this.raw[key] ?? fallback;
    if (typeof value !== 'number' || !(value > 0)) throw new RopeScalingError(`config.json: ${this.where}.${key} must be a positive number (got ${JSON.stringify(this.raw[key])})`);
    return value;
  }
  optional(key: string): number | undefined {
    const value = this.raw[key];
    return value === undefined || value === null ? undefined : this.positive(key);
  }
  factors(key: string, length: number): number[] {
    const value = this.raw[key];
    if (!Array.isArray(value) || value.length !== length || !value.every((x) => typeof x === 'number' && x > 0)) {
      throw new RopeScalingError(`config.json: ${this.where}.${key} must be ${length} positive numbers (rotary dimension / 2)`);
    }
    return value as number[];
  }
}

const TYPES: Readonly<Record<string, RopeType>> = {
  default: { keys: [], resolve: (p, dim) => plain(inverseFrequencies(dim, p.positive('rope_theta'))) },
  linear: { keys: ['factor'], resolve: (p, dim) => plain(inverseFrequencies(dim, p.positive('rope_theta')).map((f) => f / p.positive('factor'))) },
  // transformers recomputes θ only once a sequence grows past max_position_embeddings: within it
  // dynamic NTK is plain RoPE, and the served context is that length.
  dynamic: {
    keys: ['factor', 'original_max_position_embeddings'],
    resolve: (p, dim, c) => {
      p.positive('factor');
      return {
        ...plain(inverseFrequencies(dim, p.positive('rope_theta'))),
        maxContext: c.maxPositionEmbeddings,
        notes: [`dynamic NTK RoPE equals plain RoPE up to max_position_embeddings (${c.maxPositionEmbeddings}), the context served`],
      };
    },
  },
  llama3: { keys: ['factor', 'low_freq_factor', 'high_freq_factor', 'original_max_position_embeddings'], resolve: (p, dim) => plain(llama3Frequencies(p, dim)) },
  yarn: {
    keys: ['factor', 'original_max_position_embeddings', 'attention_factor', 'beta_fast', 'beta_slow', 'mscale', 'mscale_all_dim', 'truncate'],
    resolve: (p, dim, c) => yarn(p, dim, c),
  },
  longrope: { keys: ['factor', 'original_max_position_embeddings', 'attention_factor', 'long_factor', 'short_factor'], resolve: (p, dim, c) => longrope(p, dim, c) },
};

/** θ_i and the cos/sin factor for `parameters` (a rope_parameters dict with rope_theta filled in). */
export function resolveRope(parameters: Record<string, unknown>, context: RopeContext): ResolvedRope {
  const kind = parameters['rope_type'] ?? parameters['type'] ?? 'default';
  const type = typeof kind === 'string' ? TYPES[kind] : undefined;
  if (!type) throw new RopeScalingError(`config.json: ${context.source} type ${JSON.stringify(kind)} is not supported (${Object.keys(TYPES).join(', ')})`);
  const unknown = Object.keys(parameters).filter((key) => !COMMON_KEYS.includes(key) && !type.keys.includes(key) && parameters[key] !== null);
  if (unknown.length > 0) throw new RopeScalingError(`config.json: ${context.source} (${kind}) has ${unknown.map((k) => `'${k}'`).join(', ')}, which conveyor convert does not implement`);
  const p = new Params(parameters, `${context.source}`);
  const partial = p.positive('partial_rotary_factor', 1);
  if (partial > 1) throw new RopeScalingError(`config.json: partial_rotary_factor ${partial} is over 1`);
  // transformers: int(head_dim * partial_rotary_factor) dimensions rotate, in pairs.
  const dim = Math.floor(context.headDim * partial);
  if (dim < 2 || dim % 2 !== 0) throw new RopeScalingError(`config.json: the rotary dimension ${dim} (head_dim ${context.headDim} × partial_rotary_factor ${partial}) must be even and at least 2`);
  return type.resolve(p, dim, context);
}

function plain(inverse: number[]): ResolvedRope {
  return { rope: { inverseFrequencies: inverse, attentionFactor: 1 }, notes: [] };
}

/**
 * Llama 3.1's rule: wavelengths shorter than original/high_freq_factor keep their frequency,
 * longer than original/low_freq_factor are slowed by `factor`, and those between blend the two
 * linearly in original/wavelength.
 */
function llama3Frequencies(p: Params, dim: number): number[] {
  const [factor, low, high, original] = [p.positive('factor'), p.positive('low_freq_factor'), p.positive('high_freq_factor'), p.positive('original_max_position_embeddings')];
  if (high <= low) throw new RopeScalingError('config.json: rope_scaling (llama3) needs high_freq_factor > low_freq_factor');
  const [shortest, longest] = [original / high, original / low];
  return inverseFrequencies(dim, p.positive('rope_theta')).map((frequency) => {
    const wavelength = (2 * Math.PI) / frequency;
    if (wavelength < shortest) return frequency;
    if (wavelength > longest) return frequency / factor;
    const blend = (original / wavelength - low) / (high - low);
    return (1 - blend) * (frequency / factor) + blend * frequency;
  });
}

/** YaRN: interpolated (θ/factor) below a ramp of dimensions, extrapolated (θ) above it, and cos/sin scaled by the attention factor. */
function yarn(p: Params, dim: number, c: RopeContext): ResolvedRope {
  const base = p.positive('rope_theta');
  const original = c.originalMaxPositionEmbeddings ?? p.positive('original_max_position_embeddings', c.maxPositionEmbeddings);
  const factor = p.optional('factor') ?? c.maxPositionEmbeddings / original;
  const mscale = (scale: number, m = 1): number => (scale <= 1 ? 1 : 0.1 * m * Math.log(scale) + 1);
  const [m, mAll] = [p.optional('mscale'), p.optional('mscale_all_dim')];
  const attentionFactor = p.optional('attention_factor') ?? (m && mAll ? mscale(factor, m) / mscale(factor, mAll) : mscale(factor));
  const betaFast = p.optional('beta_fast') ?? 32;
  const betaSlow = p.optional('beta_slow') ?? 1;
  const truncate = p.raw['truncate'] ?? true;
  if (typeof truncate !== 'boolean') throw new RopeScalingError(`config.json: ${c.source}.truncate must be true or false`);
  const correction = (rotations: number): number => (dim * Math.log(original / (rotations * 2 * Math.PI))) / (2 * Math.log(base));
  let [low, high] = [correction(betaFast), correction(betaSlow)];
  if (truncate) [low, high] = [Math.floor(low), Math.ceil(high)];
  [low, high] = [Math.max(low, 0), Math.min(high, dim - 1)];
  if (low === high) high += 0.001;
  const extrapolated = inverseFrequencies(dim, base);
  const inverse = extrapolated.map((frequency, i) => {
    const ramp = Math.min(1, Math.max(0, (i - low) / (high - low)));
    const keep = 1 - ramp;
    return (frequency / factor) * (1 - keep) + frequency * keep;
  });
  return { rope: { inverseFrequencies: inverse, attentionFactor }, notes: [] };
}

/**
 * LongRoPE (Phi-3 / Phi-4): θ_i divided by per-pair factors, cos/sin scaled by the attention
 * factor. transformers switches from the short to the long factors once a sequence passes
 * original_max_position_embeddings, re-rotating nothing already cached; a static graph cannot follow
 * that switch, so the short factors are used and the served context is capped at that length,
 * where they equal transformers exactly.
 */
function longrope(p: Params, dim: number, c: RopeContext): ResolvedRope {
  const original = c.originalMaxPositionEmbeddings ?? p.positive('original_max_position_embeddings', c.maxPositionEmbeddings);
  const factor = p.optional('factor') ?? c.maxPositionEmbeddings / original;
  const attentionFactor = p.optional('attention_factor') ?? (factor <= 1 ? 1 : Math.sqrt(1 + Math.log(factor) / Math.log(original)));
  const short = p.factors('short_factor', dim / 2);
  p.factors('long_factor', dim / 2);
  const inverse = inverseFrequencies(dim, p.positive('rope_theta')).map((frequency, i) => frequency / short[i]!);
  const notes =
    original < c.maxPositionEmbeddings ? [`longrope: the short factors are applied, so the served context is original_max_position_embeddings (${original}), not ${c.maxPositionEmbeddings}`] : [];
  return { rope: { inverseFrequencies: inverse, attentionFactor }, maxContext: original, notes };
}
