// Prompts for a run, as vLLM's random datasets build them: per request an input and output length
// drawn uniformly from [L·(1 − r), L·(1 + r)], a prompt made of random ordinary token ids of the
// model's tokenizer decoded to text, then re-tokenized and corrected until the server will count
// exactly the length drawn (decoding and re-encoding merges or splits tokens at the seams).
// `random` may put one shared prefix before every prompt; `shared-prefix` cycles through a few
// prefixes, so a server with prefix caching can skip most of each prefill. Without a tokenizer the
// prompts are random words and lengths are only approximate (the server's usage tells the truth).

import { SeededRandom } from '../../../kernels/onnx/random.js';
import { createTokenizer, readModelFiles } from '../../../src/tokenizer/model-files.js';
import type { PromptRequest } from './client.js';

export type DatasetKind = 'random' | 'shared-prefix';

export interface DatasetSpec {
  readonly kind: DatasetKind;
  readonly numPrompts: number;
  /** Tokens after the prefix. */
  readonly inputLen: number;
  readonly outputLen: number;
  readonly rangeRatio: number;
  /** Tokens of each shared prefix (0: none). */
  readonly prefixLen: number;
  /** Distinct prefixes (shared-prefix); requests take them in turn. */
  readonly numPrefixes: number;
  readonly seed: number;
}

export interface PromptTokenizer {
  /** Token ids of `text`; with `special`, as the server counts a completions prompt (BOS etc. added). */
  encode(text: string, special: boolean): number[];
  decode(ids: readonly number[]): string;
  /** Ids below this are ordinary tokens; added and special tokens sit above. */
  readonly ordinaryVocab: number;
}

export async function loadPromptTokenizer(dir: string): Promise<PromptTokenizer> {
  const tokenizer = createTokenizer(await readModelFiles(dir));
  return {
    encode: (text, special) => tokenizer.encode(text, { add_special_tokens: special }).ids,
    decode: (ids) => tokenizer.decode([...ids], { skip_special_tokens: false }),
    ordinaryVocab: tokenizer.get_vocab(false).size,
  };
}

export function countTokens(tokenizer: PromptTokenizer, text: string): number {
  return tokenizer.encode(text, true).length;
}

/** Attempts at correcting a prompt's length before settling for the closest seen. */
const MAX_ADJUSTMENTS = 10;

/** Uniform integer in [low, high]. */
function between(random: SeededRandom, low: number, high: number): number {
  return low + (random.nextUint32() % (high - low + 1));
}

export function lengthRange(length: number, rangeRatio: number, min: number): [number, number] {
  if (!(rangeRatio >= 0 && rangeRatio < 1)) throw new Error(`range ratio must be in [0, 1), got ${rangeRatio}`);
  return [Math.max(min, Math.floor(length * (1 - rangeRatio))), Math.max(min, Math.floor(length * (1 + rangeRatio)))];
}

export function buildDataset(spec: DatasetSpec, tokenizer: PromptTokenizer | null): PromptRequest[] {
  const random = new SeededRandom(spec.seed);
  const text = tokenizer ? tokenText(tokenizer, random) : wordText(random);
  const prefixCount = spec.kind === 'shared-prefix' ? spec.numPrefixes : 1;
  const prefixes = spec.prefixLen > 0 ? Array.from({ length: prefixCount }, () => text('', spec.prefixLen)) : [{ text: '', len: 0 }];
  const [inLow, inHigh] = lengthRange(spec.inputLen, spec.rangeRatio, 1);
  const [outLow, outHigh] = lengthRange(spec.outputLen, spec.rangeRatio, 1);
  return Array.from({ length: spec.numPrompts }, (_, i) => {
    const prefix = prefixes[i % prefixes.length]!;
    const prompt = text(prefix.text, prefix.len + between(random, inLow, inHigh));
    return { prompt: prompt.text, promptLen: prompt.len, outputLen: between(random, outLow, outHigh) };
  });
}

type TextMaker = (prefix: string, totalLen: number) => { text: string; len: number };

/**
 * `prefix` + random tokens, corrected until the whole prompt counts `totalLen` tokens. Each round
 * re-encodes the suffix first: cutting k tokens off ids the tokenizer itself produced removes
 * about k tokens, whereas random ids may merge or split when re-read.
 */
function tokenText(tokenizer: PromptTokenizer, random: SeededRandom): TextMaker {
  const ids = (n: number): number[] => random.ints(n, tokenizer.ordinaryVocab);
  return (prefix, totalLen) => {
    const prefixLen = prefix === '' ? 0 : countTokens(tokenizer, prefix);
    let suffix = ids(Math.max(1, totalLen - prefixLen));
    let best = { text: '', len: -1 };
    for (let attempt = 0; attempt < MAX_ADJUSTMENTS; attempt++) {
      const text = prefix + tokenizer.decode(suffix);
      const len = countTokens(tokenizer, text);
      if (Math.abs(len - totalLen) < Math.abs(best.len - totalLen)) best = { text, len };
      if (len === totalLen) break;
      const settled = tokenizer.encode(tokenizer.decode(suffix), false);
      suffix = len > totalLen ? settled.slice(0, Math.max(1, settled.length - (len - totalLen))) : settled.concat(ids(totalLen - len));
    }
    return best;
  };
}

const SYLLABLES = ['ka', 'lo', 'mi', 'ten', 'ar', 'su', 'vel', 'or', 'ni', 'pa', 'ros', 'de', 'li', 'um', 'ga', 'the', 'in', 'sta'];

/** Pseudo-words, one per "token": close enough for a server whose tokenizer is unknown. */
function wordText(random: SeededRandom): TextMaker {
  const word = (): string => Array.from({ length: between(random, 1, 3) }, () => SYLLABLES[random.nextUint32() % SYLLABLES.length]!).join('');
  return (prefix, totalLen) => {
    const prefixWords = prefix === '' ? 0 : prefix.split(' ').length;
    const words = Array.from({ length: Math.max(1, totalLen - prefixWords) }, word).join(' ');
    return { text: prefix === '' ? words : `${prefix} ${words}`, len: prefixWords + Math.max(1, totalLen - prefixWords) };
  };
}
