import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Tokenizer } from '@huggingface/tokenizers';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { maskedMeanPoolReference } from '../../../kernels/masked-mean-pool.js';
import type { Precision } from '../../../kernels/linear.js';
import { PRECISIONS, VARIANT_FILE, sha256Of } from '../../../models/common/model-files.js';
import { BERT_CONFIGS } from '../../../models/bert/config.js';
import { buildBertEncoder } from '../../../models/bert/graph.js';
import { writeBertModel } from '../../../models/bert/write.js';
import { relativeError } from '../../support/onnx.js';

// Bump together with a deliberate change to the tiny graph or its weights.
const TINY_FP32_SHA256 = 'eba4cd77ff9dfcf36616cdd492353a7ad3ab26b053890053ca642d053d08fcc7';

const SENTENCES = [
  'The quick brown fox jumps over the lazy dog.',
  'Hello world!',
  'Embeddings map sentences to vectors; similar meanings land close together.',
  'Conveyor serves BERT-style encoders next to LLMs.',
];
const HIDDEN = BERT_CONFIGS.tiny.hiddenSize;

interface Batch {
  readonly rows: number;
  readonly length: number;
  readonly mask: number[];
  readonly feeds: Record<string, ort.Tensor>;
}

/** Right-pads the encodings to one length, as a BERT batch is padded ([PAD] = 0, mask 0). */
function toBatch(encodings: { ids: number[]; attention_mask: number[]; token_type_ids: number[] }[]): Batch {
  const length = Math.max(...encodings.map((e) => e.ids.length));
  const padded = (pick: (e: (typeof encodings)[number]) => number[]) => encodings.flatMap((e) => [...pick(e), ...new Array<number>(length - pick(e).length).fill(0)]);
  const tensor = (values: number[]) => new ort.Tensor('int64', BigInt64Array.from(values, BigInt), [encodings.length, length]);
  const mask = padded((e) => e.attention_mask);
  const feeds = { input_ids: tensor(padded((e) => e.ids)), attention_mask: tensor(mask), token_type_ids: tensor(padded((e) => e.token_type_ids)) };
  return { rows: encodings.length, length, mask, feeds };
}

function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let [dot, na, nb] = [0, 0, 0];
  for (let i = 0; i < a.length; i++) [dot, na, nb] = [dot + a[i]! * b[i]!, na + a[i]! ** 2, nb + b[i]! ** 2];
  return dot / Math.sqrt(na * nb);
}

describe('BERT-style encoder (tiny)', () => {
  let dir: string;
  let files: Record<string, string>;
  let tokenizer: Tokenizer;
  const sessions = {} as Record<Precision, ort.InferenceSession>;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'conveyor-bert-'));
    files = await writeBertModel(dir, 'tiny');
    const json = async (name: string) => JSON.parse(await readFile(join(dir, name), 'utf8')) as object;
    tokenizer = new Tokenizer(await json('tokenizer.json'), await json('tokenizer_config.json'));
    for (const p of PRECISIONS) {
      sessions[p] = await ort.InferenceSession.create(join(dir, VARIANT_FILE[p]), { intraOpNumThreads: 1, logSeverityLevel: 3 });
    }
  });
  afterAll(async () => {
    await Promise.all(Object.values(sessions).map((s) => s.release()));
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const encode = (text: string) => tokenizer.encode(text, { return_token_type_ids: true });
  const run = async (p: Precision, batch: Batch) => {
    const out = await sessions[p].run(batch.feeds);
    return { hidden: out.last_hidden_state!.data as Float32Array, embedding: out.sentence_embedding!.data as Float32Array };
  };

  it('builds byte-identical tiny fp32 files, with the pinned sha256', () => {
    const first = sha256Of(buildBertEncoder({ size: 'tiny', precision: 'fp32' }).model);
    const second = sha256Of(buildBertEncoder({ size: 'tiny', precision: 'fp32' }).model);
    expect(second).toBe(first);
    expect(files['model.onnx']).toBe(first);
    expect(first).toBe(TINY_FP32_SHA256);
  });

  it('ships a real BERT uncased WordPiece tokenizer whose vocabulary matches the model', () => {
    const e = encode('The quick brown fox jumps over the lazy dog.');
    expect(e.ids).toEqual([101, 1996, 4248, 2829, 4419, 14523, 2058, 1996, 13971, 3899, 1012, 102]);
    expect(encode('Tokenizers split embeddings.').tokens).toEqual(['[CLS]', 'token', '##izer', '##s', 'split', 'em', '##bed', '##ding', '##s', '.', '[SEP]']);
    expect(tokenizer.get_vocab().size).toBe(BERT_CONFIGS.tiny.vocabSize);
    expect(files['tokenizer.json']).toMatch(/^[0-9a-f]{64}$/);
  });

  it('keeps one I/O signature in every variant: int64 inputs, float32 outputs', () => {
    for (const p of PRECISIONS) {
      const s = sessions[p];
      expect(s.inputMetadata.map((m) => [m.name, m.isTensor && m.type])).toEqual([
        ['input_ids', 'int64'],
        ['attention_mask', 'int64'],
        ['token_type_ids', 'int64'],
      ]);
      expect(s.outputMetadata.map((m) => [m.name, m.isTensor && m.type])).toEqual([
        ['last_hidden_state', 'float32'],
        ['sentence_embedding', 'float32'],
      ]);
    }
  });

  it('outputs a unit-norm sentence embedding equal to the masked mean pool of last_hidden_state', async () => {
    const batch = toBatch(SENTENCES.map(encode));
    const { hidden, embedding } = await run('fp32', batch);
    const pooled = maskedMeanPoolReference({ dims: [batch.rows, batch.length, HIDDEN], data: Float64Array.from(hidden) }, batch.mask);
    expect(relativeError(embedding, pooled.data)).toBeLessThan(1e-5);
    for (let b = 0; b < batch.rows; b++) expect(Math.hypot(...embedding.subarray(b * HIDDEN, (b + 1) * HIDDEN))).toBeCloseTo(1, 5);
  });

  it('gives each row of a padded batch the outputs it gets alone', async () => {
    const [long, short] = [encode(SENTENCES[2]!), encode(SENTENCES[1]!)];
    const together = await run('fp32', toBatch([long, short]));
    const length = Math.max(long.ids.length, short.ids.length);
    for (const [row, e] of [long, short].entries()) {
      const alone = await run('fp32', toBatch([e]));
      const start = row * length * HIDDEN;
      expect(relativeError(together.hidden.subarray(start, start + e.ids.length * HIDDEN), alone.hidden)).toBeLessThan(1e-4);
      expect(relativeError(together.embedding.subarray(row * HIDDEN, (row + 1) * HIDDEN), alone.embedding)).toBeLessThan(1e-4);
    }
  });

  it('has fp16 and int8 variants whose sentence embeddings agree with fp32', async () => {
    const batch = toBatch(SENTENCES.map(encode));
    const reference = await run('fp32', batch);
    // Thresholds a user would accept for a drop-in variant of an embedding model.
    const threshold: Record<Precision, number> = { fp32: 1, fp16: 0.999, int8: 0.99 };
    for (const p of ['fp16', 'int8'] as const) {
      const { hidden, embedding } = await run(p, batch);
      const similarities = Array.from({ length: batch.rows }, (_, b) => cosine(embedding.subarray(b * HIDDEN, (b + 1) * HIDDEN), reference.embedding.subarray(b * HIDDEN, (b + 1) * HIDDEN)));
      const worst = Math.min(...similarities);
      const hiddenError = relativeError(hidden, reference.hidden);
      console.log(
        `[bert tiny] ${p} vs fp32: sentence_embedding cosine min ${worst.toFixed(6)} (1 - min = ${(1 - worst).toExponential(2)}), last_hidden_state rel. err ${hiddenError.toExponential(2)}`,
      );
      expect(worst).toBeGreaterThan(threshold[p]);
    }
  });
});
