// What the server asks of a model's tokenizer, as plain interfaces: the main thread's input and
// output processors, the tokenizer worker and the front ends (token strings for logprobs) all hold
// a @huggingface/tokenizers Tokenizer through these, whichever layer built it.

/** The slice of a tokenizer the detokenizer needs (@huggingface/tokenizers' Tokenizer fits). */
export interface TokenDecoder {
  decode(ids: number[], options?: { skip_special_tokens?: boolean }): string;
}

/**
 * The part of @huggingface/tokenizers' Tokenizer that Conveyor uses. The package's .d.ts files
 * import each other without file extensions, which NodeNext resolution cannot follow, so its own
 * types arrive as `any`; this interface keeps the calls checked.
 */
export interface TextTokenizer extends TokenDecoder {
  encode(text: string, options?: { add_special_tokens?: boolean }): { ids: number[] };
  token_to_id(token: string): number | undefined;
  id_to_token(id: number): string | undefined;
  get_vocab(withAddedTokens?: boolean): Map<string, number>;
}
