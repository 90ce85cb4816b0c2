// text-embedder's last step: bert-tiny's last_hidden_state [batch, tokens, hidden] averaged over
// the tokens attention_mask keeps (padding left out), then scaled to unit L2 norm, as
// sentence-transformers' mean pooling with normalisation computes a sentence embedding.
import { fp32, type ModelRequest, type ModelResponse } from 'conveyor/backend';

export default class MeanPool {
  execute(requests: readonly ModelRequest[]): ModelResponse[] {
    return requests.map((request) => {
      const hidden = request.input('last_hidden_state');
      const mask = request.input('attention_mask').data as BigInt64Array;
      const [rows = 0, tokens = 0, width = 0] = hidden.shape;
      const states = hidden.data as Float32Array;
      const pooled = new Float32Array(rows * width);
      for (let r = 0; r < rows; r++) {
        const out = pooled.subarray(r * width, (r + 1) * width);
        let kept = 0;
        for (let t = 0; t < tokens; t++) {
          if (mask[r * tokens + t] === 0n) continue;
          kept++;
          const at = (r * tokens + t) * width;
          for (let d = 0; d < width; d++) out[d]! += states[at + d]!;
        }
        let norm = 0;
        for (let d = 0; d < width; d++) {
          out[d] = out[d]! / Math.max(kept, 1);
          norm += out[d]! * out[d]!;
        }
        norm = Math.sqrt(norm);
        if (norm > 0) for (let d = 0; d < width; d++) out[d] = out[d]! / norm;
      }
      return { outputs: [fp32('EMBEDDING', [rows, width], pooled)] };
    });
  }
}
