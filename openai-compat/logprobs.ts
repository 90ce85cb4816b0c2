// Engine logprobs (token ids, natural logs) in OpenAI's two shapes: chat's content[] of
// {token, logprob, bytes, top_logprobs} and the legacy completions' parallel arrays. A token's
// `bytes` are its real bytes: a byte-level BPE token that holds half a character decodes to
// U+FFFD on its own, but the client needs the raw bytes to rebuild the text across tokens.

import type { TokenLogprob } from '../src/contracts/generate.js';
import type { TextTokenizer } from '../src/contracts/tokenizer.js';

export interface ChatTopLogprob {
  readonly token: string;
  readonly logprob: number;
  readonly bytes: number[] | null;
}

export interface ChatTokenLogprob extends ChatTopLogprob {
  readonly top_logprobs: ChatTopLogprob[];
}

export interface CompletionLogprobs {
  tokens: string[];
  /** Null only for an echoed prompt's first token, which nothing precedes. */
  token_logprobs: (number | null)[];
  top_logprobs: (Record<string, number> | null)[];
  text_offset: number[];
}

// vLLM's stand-in for −∞ (a token masked by logit_bias): JSON has no infinity.
const FLOOR = -9999;
const finite = (logprob: number): number => (Number.isFinite(logprob) ? logprob : FLOOR);

/** GPT-2's printable stand-ins for bytes, inverted: character code → byte. */
function byteLevelDecoder(): Map<number, number> {
  const printable = (b: number): boolean => (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
  const map = new Map<number, number>();
  let next = 256;
  for (let b = 0; b < 256; b++) map.set(printable(b) ? b : next++, b);
  return map;
}

/** How logprobs spell a token: its text and bytes. */
export interface TokenSpelling {
  text(id: number): string;
  bytes(id: number): number[];
}

/**
 * vLLM's `return_tokens_as_token_ids`: every token (sampled, alternatives, echoed prompt) spelled
 * `token_id:<id>`, its bytes those of that spelling, so a client that cannot map text back to ids
 * (a byte-level token holding half a character) reads the id itself.
 */
export const TOKEN_ID_SPELLING: TokenSpelling = {
  text: (id) => `token_id:${id}`,
  bytes: (id) => [...Buffer.from(`token_id:${id}`, 'utf8')],
};

/** Per-model token strings and bytes, cached: the same few thousand ids recur constantly. */
export class TokenText implements TokenSpelling {
  private readonly texts = new Map<number, string>();
  private readonly byteCache = new Map<number, number[]>();
  private readonly byteLevel: Map<number, number> | null;

  constructor(private readonly tokenizer: TextTokenizer) {
    // A byte-level vocabulary spells a space as 'Ġ' (U+0120).
    const space = tokenizer.encode(' ', { add_special_tokens: false }).ids;
    this.byteLevel = space.length === 1 && tokenizer.id_to_token(space[0]!) === '\u0120' ? byteLevelDecoder() : null;
  }

  text(id: number): string {
    let text = this.texts.get(id);
    if (text === undefined) {
      text = this.tokenizer.decode([id], { skip_special_tokens: false });
      this.texts.set(id, text);
    }
    return text;
  }

  bytes(id: number): number[] {
    let bytes = this.byteCache.get(id);
    if (bytes === undefined) {
      bytes = this.rawBytes(id) ?? [...Buffer.from(this.text(id), 'utf8')];
      this.byteCache.set(id, bytes);
    }
    return bytes;
  }

  private rawBytes(id: number): number[] | null {
    const piece = this.byteLevel === null ? undefined : this.tokenizer.id_to_token(id);
    if (piece === undefined || this.byteLevel === null) return null;
    const out: number[] = [];
    for (const ch of piece) {
      const byte = this.byteLevel.get(ch.codePointAt(0)!);
      // Added tokens are stored verbatim, not byte-mapped: fall back to their UTF-8.
      if (byte === undefined) return null;
      out.push(byte);
    }
    return out;
  }
}

export function chatLogprobs(logprobs: readonly TokenLogprob[], text: TokenSpelling): ChatTokenLogprob[] {
  return logprobs.map((lp) => ({
    token: text.text(lp.tokenId),
    logprob: finite(lp.logprob),
    bytes: text.bytes(lp.tokenId),
    top_logprobs: lp.top.map((t) => ({ token: text.text(t.tokenId), logprob: finite(t.logprob), bytes: text.bytes(t.tokenId) })),
  }));
}

/**
 * Completions logprobs for a run of tokens whose text starts at character `offset` of the
 * choice's text; returns the offset after them, for the next chunk.
 */
export function completionLogprobs(logprobs: readonly TokenLogprob[], text: TokenSpelling, offset: number): { logprobs: CompletionLogprobs; offset: number } {
  const out: CompletionLogprobs = { tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] };
  let at = offset;
  for (const lp of logprobs) {
    const token = text.text(lp.tokenId);
    out.tokens.push(token);
    out.token_logprobs.push(finite(lp.logprob));
    out.top_logprobs.push(Object.fromEntries(lp.top.map((t) => [text.text(t.tokenId), finite(t.logprob)])));
    out.text_offset.push(at);
    at += token.length;
  }
  return { logprobs: out, offset: at };
}

export function appendCompletionLogprobs(into: CompletionLogprobs, more: CompletionLogprobs): void {
  into.tokens.push(...more.tokens);
  into.token_logprobs.push(...more.token_logprobs);
  into.top_logprobs.push(...more.top_logprobs);
  into.text_offset.push(...more.text_offset);
}
