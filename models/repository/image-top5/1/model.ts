// image-classifier's last step: resnet-tiny's logits to the five likeliest classes, best first:
// their labels (the lines of resnet-tiny's label file, as Triton's classification extension
// names classes; the class index when the file has no such line), softmax probabilities and
// class indices. Ties keep the lower index first.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { bytes, fp32, tensor, type InitializeArgs, type ModelRequest, type ModelResponse } from 'conveyor/backend';

const K = 5;

export default class ImageTop5 {
  private labels: string[] = [];

  initialize(args: InitializeArgs): void {
    const file = args.model_config.parameters['label_filename']?.string_value ?? 'labels.txt';
    this.labels = readFileSync(join(args.model_repository, file), 'utf8').split('\n');
  }

  execute(requests: readonly ModelRequest[]): ModelResponse[] {
    return requests.map((request) => {
      const logits = request.input('logits');
      const classes = logits.shape.at(-1)!;
      const rows = logits.shape[0]!;
      const data = logits.data as Float32Array;
      const labels: string[] = [];
      const scores: number[] = [];
      const ids: bigint[] = [];
      for (let r = 0; r < rows; r++) {
        const row = data.subarray(r * classes, (r + 1) * classes);
        const max = row.reduce((m, v) => Math.max(m, v), -Infinity);
        let total = 0;
        for (const v of row) total += Math.exp(v - max);
        const top = [...row.keys()].sort((a, b) => row[b]! - row[a]! || a - b).slice(0, K);
        for (const c of top) {
          labels.push(this.labels[c] || String(c));
          scores.push(Math.exp(row[c]! - max) / total);
          ids.push(BigInt(c));
        }
      }
      return { outputs: [bytes('LABELS', [rows, K], labels), fp32('SCORES', [rows, K], scores), tensor('CLASS_IDS', 'INT64', [rows, K], ids)] };
    });
  }
}
