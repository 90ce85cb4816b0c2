// How far a decoder variant's logits are from fp32's on the same tokens: top-1 agreement and the
// largest logit difference over every position of one teacher-forced prefill (seeded random
// tokens, all positions' logits). A note beside the timings, so a faster variant's cost in
// quality is read in the same report.

import * as ort from 'onnxruntime-node';
import { fromFloat16Array } from '../../../kernels/onnx/dtypes.js';
import { SeededRandom } from '../../../kernels/onnx/random.js';
import { decoderFeeds, inspectDecoder } from './feeds.js';

export interface VariantQuality {
  readonly positions: number;
  /** Positions whose argmax equals fp32's, as a fraction. */
  readonly top1Agreement: number;
  readonly maxAbsLogitDiff: number;
}

const QUALITY_SEED = 20_261_201;

/** Teacher-forced positions a full (not --quick) run compares: `precision`'s and the engine sweep's. */
export const QUALITY_POSITIONS = 128;

async function allLogits(session: ort.InferenceSession, positions: number): Promise<{ data: Float32Array; vocab: number }> {
  const layout = inspectDecoder(session);
  const feeds = decoderFeeds(layout, { batch: 1, past: 0, seq: positions }, new SeededRandom(QUALITY_SEED));
  if (layout.logitsToKeepType) {
    const keep = layout.logitsToKeepType === 'int64' ? BigInt64Array.from([BigInt(positions)]) : Int32Array.from([positions]);
    feeds['num_logits_to_keep'] = new ort.Tensor(layout.logitsToKeepType, keep, []);
  }
  const logits = (await session.run(feeds))['logits'];
  if (!logits) throw new Error('decoder has no logits output');
  const data = logits.type === 'float16' ? fromFloat16Array(logits.data as Uint16Array) : (logits.data as Float32Array);
  return { data, vocab: logits.dims[logits.dims.length - 1]! };
}

/** `candidate` against `reference` (fp32) on the same `positions` seeded tokens. */
export async function decoderQuality(reference: ort.InferenceSession, candidate: ort.InferenceSession, positions: number): Promise<VariantQuality> {
  const [exact, approx] = [await allLogits(reference, positions), await allLogits(candidate, positions)];
  if (exact.vocab !== approx.vocab || exact.data.length !== approx.data.length) throw new Error('variants disagree on the logits shape');
  let agree = 0;
  let maxAbsLogitDiff = 0;
  for (let p = 0; p < positions; p++) {
    const [from, to] = [p * exact.vocab, (p + 1) * exact.vocab];
    let [bestExact, bestApprox] = [from, from];
    for (let i = from; i < to; i++) {
      if (exact.data[i]! > exact.data[bestExact]!) bestExact = i;
      if (approx.data[i]! > approx.data[bestApprox]!) bestApprox = i;
      maxAbsLogitDiff = Math.max(maxAbsLogitDiff, Math.abs(exact.data[i]! - approx.data[i]!));
    }
    if (bestExact === bestApprox) agree += 1;
  }
  return { positions, top1Agreement: agree / positions, maxAbsLogitDiff };
}
