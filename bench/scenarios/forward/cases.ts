// The timed cases of one loaded model. Inputs are built here, once, from a fixed seed, so a run
// times nothing but session.run (and the output copy the binding always makes).

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type * as ort from 'onnxruntime-node';
import type { WeightPrecision } from '../../../kernels/linear.js';
import { SeededRandom, seedFor } from '../../../kernels/onnx/random.js';
import type { ModelFamily } from '../../../models/catalog.js';
import type { ModelSize } from '../../../models/common/model-files.js';
import type { BenchCase, ParamValue } from '../../harness/types.js';
import { decoderFeeds, encoderFeeds, imageFeeds, inspectDecoder, type Feeds } from './feeds.js';

export interface ForwardConfig {
  readonly size: ModelSize;
  readonly families: readonly ModelFamily[];
  readonly precisions: readonly WeightPrecision[];
  readonly threads: number;
  readonly batches: readonly number[];
  /** Decode steps: tokens already cached per row. */
  readonly past: number;
  /** Prefill length at batch 1; 0 leaves the prefill case out. */
  readonly prefill: number;
  /** Encoder sequence length. */
  readonly encoderSeq: number;
  /** CNN image side, used only where the model leaves H and W free. */
  readonly imageSize: number;
}

export interface LoadedModel {
  readonly family: ModelFamily;
  readonly precision: WeightPrecision;
  readonly session: ort.InferenceSession;
  /** The build directory (config.json lives there). */
  readonly dir: string;
}

export interface ModelCases {
  readonly cases: BenchCase[];
  /** One line on the model's shape, for the summary's notes. */
  readonly description: string;
}

const SEED = 20_240_601;

export function casesFor(model: LoadedModel, config: ForwardConfig): ModelCases {
  switch (model.family) {
    case 'qwen3':
      return decoderCases(model, config);
    case 'bert':
      return encoderCases(model, config);
    case 'resnet':
      return cnnCases(model, config);
  }
}

function decoderCases(model: LoadedModel, config: ForwardConfig): ModelCases {
  const layout = inspectDecoder(model.session);
  const cases = config.batches.map((batch) => {
    const shape = { batch, past: config.past, seq: 1 };
    const feeds = decoderFeeds(layout, shape, randomFor(model, `decode-${batch}`));
    return timedRun(model, `decode b${batch}`, { phase: 'decode', ...shape }, { count: batch, unit: 'tok' }, feeds);
  });
  if (config.prefill > 0) {
    const shape = { batch: 1, past: 0, seq: config.prefill };
    const feeds = decoderFeeds(layout, shape, randomFor(model, 'prefill'));
    cases.push(timedRun(model, `prefill ${config.prefill}`, { phase: 'prefill', ...shape }, { count: config.prefill, unit: 'tok' }, feeds));
  }
  const logits = layout.logitsToKeepType ? 'num_logits_to_keep fed 1' : 'no num_logits_to_keep input (logits for every position)';
  const vocab = layout.vocab === undefined ? 'vocab not fixed in the graph' : `vocab ${layout.vocab.toLocaleString('en-US')}`;
  return { cases, description: `${layout.layers} layers, ${layout.kvHeads} KV heads × head_dim ${layout.headDim}, ${layout.kvType} KV, ${vocab}, ${logits}` };
}

function encoderCases(model: LoadedModel, config: ForwardConfig): ModelCases {
  const vocab = vocabFromConfig(model.dir) ?? 100;
  const cases = config.batches.map((batch) => {
    const feeds = encoderFeeds(model.session, batch, config.encoderSeq, vocab, randomFor(model, `encoder-${batch}`));
    return timedRun(model, `b${batch}`, { batch, seq: config.encoderSeq }, { count: batch, unit: 'items' }, feeds);
  });
  return { cases, description: `inputs ${model.session.inputNames.join(', ')}; sequence ${config.encoderSeq}, ids below ${vocab}` };
}

function cnnCases(model: LoadedModel, config: ForwardConfig): ModelCases {
  let imageDims: number[] = [];
  const cases = config.batches.map((batch) => {
    const { feeds, dims } = imageFeeds(model.session, batch, config.imageSize, randomFor(model, `cnn-${batch}`));
    imageDims = dims;
    return timedRun(model, `b${batch}`, { batch, channels: dims[1]!, height: dims[2]!, width: dims[3]! }, { count: batch, unit: 'items' }, feeds);
  });
  return { cases, description: `input ${model.session.inputNames[0]} [N, ${imageDims.slice(1).join(', ')}]` };
}

function timedRun(model: LoadedModel, point: string, params: Record<string, ParamValue>, work: BenchCase['work'], feeds: Feeds): BenchCase {
  const { session } = model;
  return {
    group: model.family,
    variant: model.precision,
    point,
    params,
    ...(work ? { work } : {}),
    run: () => session.run(feeds),
  };
}

// Every precision of a family gets the same inputs, so variants differ only in the model.
function randomFor(model: LoadedModel, purpose: string): SeededRandom {
  return new SeededRandom(seedFor(SEED, `${model.family}/${purpose}`));
}

function vocabFromConfig(dir: string): number | undefined {
  try {
    const config = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as { vocab_size?: unknown };
    return typeof config.vocab_size === 'number' && config.vocab_size > 0 ? config.vocab_size : undefined;
  } catch {
    return undefined;
  }
}
