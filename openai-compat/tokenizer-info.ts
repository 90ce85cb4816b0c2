// vLLM's GET /tokenizer_info: the tokenizer's configuration as transformers holds it after
// loading (tokenizer_config.json's fields, every serialized AddedToken reduced to its text, the
// file-path fields left out), its `tokenizer_class`, and the chat template a request without
// tools is rendered with. lm-evaluation-harness's remote tokenizer (`tokenizer_backend=remote`)
// reads eos / bos / pad tokens and the chat template from it, then counts with /tokenize and
// /detokenize. The special tokens are always present (null where the model has none): clients
// test for `eos_token` to decide the server supports remote tokenization.

import type { LlmModel } from '../src/serving/llm-backend.js';

/** Fields naming files on the server's disk, which vLLM leaves out (transformers' vocab_file / merges_file). */
const FILE_FIELDS = new Set(['vocab_file', 'merges_file', 'tokenizer_file']);

/** Fields only a serialized AddedToken has beside its `content`. */
const ADDED_TOKEN_MARKS = ['__type', 'lstrip', 'rstrip', 'single_word', 'special'];

/** A serialized AddedToken (`{"content": …, "lstrip": …}`) is reported as its text, as vLLM does. */
function plain(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(plain);
  if (value === null || typeof value !== 'object') return value;
  const record = value as Record<string, unknown>;
  if (typeof record.content === 'string' && ADDED_TOKEN_MARKS.some((mark) => mark in record)) return record.content;
  return Object.fromEntries(Object.entries(record).map(([key, inner]) => [key, plain(inner)]));
}

export function tokenizerInfo(model: LlmModel): Record<string, unknown> {
  const processor = model.processor;
  const config: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(processor.tokenizerConfig)) if (!FILE_FIELDS.has(key)) config[key] = plain(value);
  const special = processor.info.specialTokens;
  for (const [key, value] of Object.entries(special)) config[key] = value;
  const chatTemplate = processor.defaultChatTemplateSource();
  if (chatTemplate === null) delete config.chat_template;
  else config.chat_template = chatTemplate;
  // transformers' class name; a tokenizer_config.json that names none loads as the generic fast tokenizer.
  config.tokenizer_class = typeof config.tokenizer_class === 'string' ? config.tokenizer_class : 'PreTrainedTokenizerFast';
  return config;
}
