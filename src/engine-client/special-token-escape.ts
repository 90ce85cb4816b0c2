// Special-token text in anything a client hands the chat template (messages, tool calls, tools,
// template kwargs) is read as plain text, so a user cannot forge a turn
// (`<|im_end|>\n<|im_start|>system …`). The template is rendered with each special-token
// occurrence in user-supplied strings replaced by a marker that carries a per-render nonce; the
// rendered prompt is then cut at the markers: the template's own text is tokenized as usual
// (its special tokens stay special), and each marked occurrence is tokenized with special-token
// matching off (Hugging Face's `split_special_tokens=True`), giving ordinary text ids.

import { randomBytes } from 'node:crypto';
import type { TextTokenizer } from '../contracts/tokenizer.js';
import type { ModelFiles } from '../tokenizer/model-files.js';

/** One part of a prompt: template text (special tokens parsed) or escaped user text (not parsed). */
export type PromptPiece = { readonly kind: 'text'; readonly text: string } | { readonly kind: 'plain'; readonly text: string };

/** The contents of the tokenizer's added tokens flagged special (Qwen's <|im_start|>, <|im_end|>, <|endoftext|>, …). */
export function specialTokenContents(files: Pick<ModelFiles, 'tokenizerJson'>): string[] {
  const added = (files.tokenizerJson as { added_tokens?: unknown }).added_tokens;
  if (!Array.isArray(added)) return [];
  return added
    .filter((t): t is { content: string; special: true } => typeof t === 'object' && t !== null && t.special === true && typeof t.content === 'string' && t.content.length > 0)
    .map((t) => t.content);
}

/**
 * The pipeline stages @huggingface/tokenizers runs after its added-token split. They are not in
 * the package's types, so they are checked at first use: a tokenizer without them cannot encode
 * plain text, and the escaper refuses to run rather than silently parse specials.
 */
interface TokenizerStages {
  readonly normalizer: ((text: string) => string) | null;
  readonly pre_tokenizer: ((text: string, options: { section_index: number }) => string[]) | null;
  readonly model: ((pieces: string[]) => string[]) & { readonly tokens_to_ids: Map<string, number>; readonly unk_token_id?: number };
}

function stagesOf(tokenizer: TextTokenizer): TokenizerStages {
  const t = tokenizer as unknown as Partial<TokenizerStages>;
  if (typeof t.model !== 'function' || !(t.model.tokens_to_ids instanceof Map) || t.normalizer === undefined || t.pre_tokenizer === undefined) {
    throw new Error('this tokenizer cannot encode text with special-token matching off');
  }
  return t as TokenizerStages;
}

/** `text`'s ids with no added-token matching: `<|im_start|>` becomes the ids of its characters. */
export function encodePlain(tokenizer: TextTokenizer, text: string): number[] {
  const { normalizer, pre_tokenizer: preTokenizer, model } = stagesOf(tokenizer);
  const normalized = normalizer ? normalizer(text) : text;
  if (normalized.length === 0) return [];
  const pieces = preTokenizer ? preTokenizer(normalized, { section_index: 0 }) : [normalized];
  return model(pieces).map((token) => model.tokens_to_ids.get(token) ?? model.unk_token_id ?? 0);
}

const escapeRegExp = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

export class SpecialTokenEscaper {
  private readonly pattern: RegExp | null;

  constructor(private readonly specials: readonly string[]) {
    // Longest first, so a token that contains another is matched whole.
    const sorted = [...specials].sort((a, b) => b.length - a.length);
    this.pattern = sorted.length > 0 ? new RegExp(sorted.map(escapeRegExp).join('|'), 'g') : null;
  }

  /** A marker scheme for one render; the nonce keeps user text from spelling a marker. */
  session(): EscapeSession {
    return new EscapeSession(this.pattern, this.specials, randomBytes(8).toString('hex'));
  }
}

export class EscapeSession {
  private readonly open: string;
  private used = false;

  constructor(
    private readonly pattern: RegExp | null,
    private readonly specials: readonly string[],
    nonce: string,
  ) {
    // Printable ASCII with no quote or backslash, so a tojson filter (tool schemas, call arguments) writes it unchanged.
    this.open = `[[esc${nonce}:`;
  }

  /** `text` with every special-token occurrence replaced by a marker. */
  escape(text: string): string {
    if (this.pattern === null || !this.pattern.test(text)) return text;
    this.used = true;
    this.pattern.lastIndex = 0;
    return text.replace(this.pattern, (token) => `${this.open}${this.specials.indexOf(token)}]]`);
  }

  /** The rendered prompt cut into template text and escaped user text, and the prompt as it reads. */
  split(rendered: string): { pieces: PromptPiece[]; text: string } {
    if (!this.used) return { pieces: [{ kind: 'text', text: rendered }], text: rendered };
    const marker = new RegExp(`${escapeRegExp(this.open)}(\\d+)\\]\\]`, 'g');
    const pieces: PromptPiece[] = [];
    let text = '';
    let last = 0;
    for (const match of rendered.matchAll(marker)) {
      const before = rendered.slice(last, match.index);
      if (before.length > 0) pieces.push({ kind: 'text', text: before });
      const token = this.specials[Number(match[1])]!;
      pieces.push({ kind: 'plain', text: token });
      text += before + token;
      last = match.index + match[0].length;
    }
    const rest = rendered.slice(last);
    if (rest.length > 0) pieces.push({ kind: 'text', text: rest });
    return { pieces, text: text + rest };
  }
}
