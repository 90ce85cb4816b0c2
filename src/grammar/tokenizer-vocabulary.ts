// A Hugging Face tokenizer.json as xgrammar's tokenizer info wants it: every token's encoded
// string in id order (added tokens included) and how those strings map to bytes. Pure.

/** xgrammar's names for how a vocabulary's strings encode bytes. */
export type VocabType = 'byte_level' | 'byte_fallback' | 'raw';

export interface TokenizerVocabulary {
  /**
   * Encoded token strings, index = id. Special added tokens (<|im_end|>, <|endoftext|>) and ids the
   * tokenizer does not define are '': xgrammar never offers an empty token as text. Given their
   * content instead, it offered <|im_end|> inside a JSON string as the literal text "<|im_end|>"
   * and then refused it as a stop token.
   */
  readonly tokens: readonly string[];
  readonly vocabType: VocabType;
  /** Special tokens that end a text (EOS-like names): the stop tokens when a request names none. */
  readonly endTokenIds: readonly number[];
}

const END_TOKEN = /^(<\|endoftext\|>|<\|im_end\|>|<\|eot_id\|>|<\|end_of_text\|>|<\/s>|<eos>|<\|end\|>)$/;

interface TokenizerJson {
  readonly model?: { readonly type?: string; readonly vocab?: unknown };
  readonly added_tokens?: readonly { readonly id?: unknown; readonly content?: unknown; readonly special?: unknown }[];
  readonly decoder?: unknown;
}

/** Whether a decoder (or one in a Sequence) has this type. */
function hasDecoder(decoder: unknown, type: string): boolean {
  if (typeof decoder !== 'object' || decoder === null) return false;
  const d = decoder as { type?: unknown; decoders?: unknown };
  if (d.type === type) return true;
  return Array.isArray(d.decoders) && d.decoders.some((inner) => hasDecoder(inner, type));
}

/** Byte-level BPE (GPT-2, Qwen, Llama 3) maps bytes to printable characters; SentencePiece-style vocabularies fall back to <0xNN> tokens. */
export function vocabTypeOf(json: TokenizerJson): VocabType {
  if (hasDecoder(json.decoder, 'ByteLevel')) return 'byte_level';
  if (hasDecoder(json.decoder, 'ByteFallback')) return 'byte_fallback';
  return 'raw';
}

/** The vocabulary of a parsed tokenizer.json. Throws when the file has no usable vocabulary. */
export function tokenizerVocabulary(json: TokenizerJson): TokenizerVocabulary {
  const tokens: string[] = [];
  const put = (id: unknown, text: unknown): void => {
    if (typeof id !== 'number' || !Number.isInteger(id) || id < 0 || typeof text !== 'string') return;
    while (tokens.length <= id) tokens.push('');
    tokens[id] = text;
  };
  const vocab = json.model?.vocab;
  if (Array.isArray(vocab)) {
    // Unigram: [piece, score] pairs in id order.
    vocab.forEach((entry, id) => put(id, Array.isArray(entry) ? entry[0] : undefined));
  } else if (typeof vocab === 'object' && vocab !== null) {
    for (const [text, id] of Object.entries(vocab)) put(id, text);
  }
  const endTokenIds: number[] = [];
  for (const added of json.added_tokens ?? []) {
    const special = added.special === true;
    put(added.id, special ? '' : added.content);
    if (special && typeof added.id === 'number' && typeof added.content === 'string' && END_TOKEN.test(added.content)) endTokenIds.push(added.id);
  }
  if (tokens.length === 0) throw new Error('tokenizer.json has no vocabulary (model.vocab)');
  return { tokens, vocabType: vocabTypeOf(json), endTokenIds };
}

/**
 * GPT-2's byte-level alphabet: each byte as the printable character that stands for it in a
 * byte-level vocabulary. Printable Latin-1 bytes stand for themselves; the other 68 (controls,
 * space, DEL, NBSP, soft hyphen) take U+0100 onwards in byte order.
 */
function byteLevelAlphabet(): Map<string, number> {
  const byChar = new Map<string, number>();
  const printable = (b: number): boolean => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  let next = 0x100;
  for (let b = 0; b < 256; b++) byChar.set(String.fromCodePoint(printable(b) ? b : next++), b);
  return byChar;
}

let byteLevelChars: Map<string, number> | undefined;
const utf8 = new TextEncoder();
const BYTE_FALLBACK = /^<0x([0-9A-Fa-f]{2})>$/;

/**
 * The bytes a token adds to the output, as the tokenizer decodes it: byte-level characters mapped
 * back to their bytes, a byte-fallback <0xNN> piece as byte NN (its other pieces with ▁ as a
 * space), raw text as UTF-8. A byte-level string with a character outside the alphabet is taken as
 * its UTF-8 (an added token's plain text). '' is no bytes: special tokens.
 */
export function tokenBytes(text: string, vocabType: VocabType): Uint8Array {
  if (vocabType === 'byte_level') {
    byteLevelChars ??= byteLevelAlphabet();
    const bytes: number[] = [];
    for (const ch of text) {
      const b = byteLevelChars.get(ch);
      if (b === undefined) return utf8.encode(text);
      bytes.push(b);
    }
    return Uint8Array.from(bytes);
  }
  if (vocabType === 'byte_fallback') {
    const piece = BYTE_FALLBACK.exec(text);
    if (piece) return Uint8Array.of(Number.parseInt(piece[1]!, 16));
    return utf8.encode(text.replaceAll('▁', ' '));
  }
  return utf8.encode(text);
}
