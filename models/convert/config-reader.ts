// config.json read field by field: every key the converter reads is marked, and what is left at
// the end must be on the list of fields known not to change the computation (bookkeeping,
// training-only settings, generation defaults) or be null. Anything else is refused by name: a
// field this converter does not understand may change the model's math, and a conversion that
// drops it would serve silently wrong output.

import { ConvertError } from './convert-error.js';

/** Keys that never change what the decoder computes from the weights. */
const IGNORED_FIELDS = new Set([
  // Bookkeeping and loading.
  '_name_or_path',
  '_model_name_or_path',
  'transformers_version',
  'auto_map',
  '_commit_hash',
  'custom_pipelines',
  'torch_dtype', // the stored tensors' dtype: read from the safetensors headers
  'dtype',
  'transformers.js_config',
  'tokenizer_class',
  'attn_implementation',
  '_attn_implementation',
  'cache_implementation', // Gemma 3's "hybrid" cache: how transformers stores K/V, not what attention computes
  'use_cache',
  'return_dict',
  'output_attentions',
  'output_hidden_states',
  'torchscript',
  'use_bfloat16',
  'tf_legacy_loss',
  'chunk_size_feed_forward', // a memory-saving split of the same computation
  'pretraining_tp', // LLaMA's tensor-parallel slicing of the same matmuls
  // Training only.
  'initializer_range',
  'attention_dropout',
  'hidden_dropout',
  'embd_pdrop',
  'resid_pdrop',
  'dropout',
  'problem_type',
  'id2label',
  'label2id',
  'num_labels',
  'finetuning_task',
  'is_encoder_decoder',
  'is_decoder',
  'add_cross_attention',
  'tie_encoder_decoder',
  // Token ids and generation defaults: generation_config.json and the tokenizer decide these.
  'bos_token_id',
  'eos_token_id',
  'pad_token_id',
  'sep_token_id',
  'unk_token_id',
  'cls_token_id',
  'mask_token_id',
  'decoder_start_token_id',
  'prefix',
  'task_specific_params',
  'max_length',
  'min_length',
  'do_sample',
  'early_stopping',
  'num_beams',
  'num_beam_groups',
  'diversity_penalty',
  'temperature',
  'top_k',
  'top_p',
  'typical_p',
  'repetition_penalty',
  'length_penalty',
  'no_repeat_ngram_size',
  'encoder_no_repeat_ngram_size',
  'bad_words_ids',
  'num_return_sequences',
  'output_scores',
  'return_dict_in_generate',
  'forced_bos_token_id',
  'forced_eos_token_id',
  'remove_invalid_values',
  'exponential_decay_length_penalty',
  'suppress_tokens',
  'begin_suppress_tokens',
]);

export class ConfigReader {
  private readonly seen = new Set<string>();

  constructor(private readonly raw: Readonly<Record<string, unknown>>) {}

  /** The value, marking the key as handled. */
  value(key: string): unknown {
    this.seen.add(key);
    return this.raw[key];
  }

  /** Present and not null. */
  has(key: string): boolean {
    return this.raw[key] !== undefined && this.raw[key] !== null;
  }

  int(key: string, fallback?: number): number {
    const value = this.value(key) ?? fallback;
    if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0) throw new ConvertError(`config.json: ${key} must be a positive integer (got ${JSON.stringify(this.raw[key])})`);
    return value;
  }

  number(key: string, fallback?: number): number {
    const value = this.value(key) ?? fallback;
    if (typeof value !== 'number' || !(value > 0)) throw new ConvertError(`config.json: ${key} must be a positive number (got ${JSON.stringify(this.raw[key])})`);
    return value;
  }

  /** A positive number, or undefined where the key is absent or null. */
  optionalNumber(key: string): number | undefined {
    if (this.has(key)) return this.number(key);
    this.value(key);
    return undefined;
  }

  bool(key: string, fallback: boolean): boolean {
    const value = this.value(key) ?? fallback;
    if (typeof value !== 'boolean') throw new ConvertError(`config.json: ${key} must be true or false (got ${JSON.stringify(value)})`);
    return value;
  }

  /** Refuses the key unless it is absent, null or `allowed`. */
  expect(key: string, allowed: unknown, why: string): void {
    const value = this.value(key);
    if (value !== undefined && value !== null && value !== allowed) throw new ConvertError(`config.json: ${key} ${JSON.stringify(value)} is not supported (${why})`);
  }

  /** Fails on the first key neither read nor known not to matter. */
  refuseUnread(architecture: string): void {
    const left = Object.keys(this.raw).filter((key) => !this.seen.has(key) && !IGNORED_FIELDS.has(key) && this.raw[key] !== null && !isEmpty(this.raw[key]));
    if (left.length > 0) {
      throw new ConvertError(
        `config.json: ${left.map((k) => `'${k}'`).join(', ')} ${left.length === 1 ? 'is' : 'are'} not understood by conveyor convert for ${architecture}, and may change the model's computation: refusing rather than converting it wrong`,
      );
    }
  }
}

/** {} and [] carry nothing (e.g. an empty pruned_heads). */
function isEmpty(value: unknown): boolean {
  return (Array.isArray(value) && value.length === 0) || (typeof value === 'object' && value !== null && Object.keys(value).length === 0);
}
