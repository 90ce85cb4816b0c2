// RoPE frequency rescaling declared by a checkpoint's config.json `rope_scaling`. Only the kinds
// that change θ_i alone (no cos/sin scaling, no position-dependent tables) fit the decoder graph's
// rotary tables; others are refused by name.

import { inverseFrequencies } from '../../kernels/rotary-embedding.js';

export class RopeScalingError extends Error {}

interface Llama3Scaling {
  readonly factor: number;
  readonly low_freq_factor: number;
  readonly high_freq_factor: number;
  readonly original_max_position_embeddings: number;
}

/** θ_i for `rope_scaling`, or undefined for plain RoPE (no scaling, or type "default"). */
export function scaledInverseFrequencies(scaling: Record<string, unknown> | null | undefined, headDim: number, theta: number): number[] | undefined {
  const kind = scaling?.['rope_type'] ?? scaling?.['type'] ?? 'default';
  if (!scaling || kind === 'default') return undefined;
  if (kind === 'llama3') return llama3Frequencies(llama3Scaling(scaling), headDim, theta);
  throw new RopeScalingError(`config.json: rope_scaling type ${JSON.stringify(kind)} is not supported yet (plain RoPE and "llama3")`);
}

function llama3Scaling(raw: Record<string, unknown>): Llama3Scaling {
  const positive = (key: keyof Llama3Scaling): number => {
    const value = raw[key];
    if (typeof value !== 'number' || !(value > 0)) throw new RopeScalingError(`config.json: rope_scaling (llama3) needs a positive ${key}`);
    return value;
  };
  const scaling = {
    factor: positive('factor'),
    low_freq_factor: positive('low_freq_factor'),
    high_freq_factor: positive('high_freq_factor'),
    original_max_position_embeddings: positive('original_max_position_embeddings'),
  };
  if (scaling.high_freq_factor <= scaling.low_freq_factor) throw new RopeScalingError('config.json: rope_scaling (llama3) needs high_freq_factor > low_freq_factor');
  return scaling;
}

/**
 * Llama 3.1's rule: wavelengths shorter than original/high_freq_factor keep their frequency,
 * longer than original/low_freq_factor are slowed by `factor`, and those between blend the two
 * linearly in original/wavelength.
 */
function llama3Frequencies(s: Llama3Scaling, headDim: number, theta: number): number[] {
  const shortest = s.original_max_position_embeddings / s.high_freq_factor;
  const longest = s.original_max_position_embeddings / s.low_freq_factor;
  return inverseFrequencies(headDim, theta).map((frequency) => {
    const wavelength = (2 * Math.PI) / frequency;
    if (wavelength < shortest) return frequency;
    if (wavelength > longest) return frequency / s.factor;
    const blend = (s.original_max_position_embeddings / wavelength - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
    return (1 - blend) * (frequency / s.factor) + blend * frequency;
  });
}
