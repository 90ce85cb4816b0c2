// text-embedder's first step: a batch of texts (BYTES, one per row) to bert-tiny's three inputs
// with bert-tiny's own WordPiece tokenizer (its tokenizer files, copied beside this file by
// models/default-repository.ts). Rows are padded with [PAD] to the request's longest text,
// rounded up to `pad_to_multiple_of` tokens, so concurrent requests of similar length share a
// shape and meet in one bert-tiny batch (the batcher stacks equal shapes only); the mean-pool step
// reads attention_mask and ignores the padding.
import { InferenceError, asStrings, loadTokenizer, tensor, type EncoderTokenizer, type InitializeArgs, type ModelRequest, type ModelResponse } from 'conveyor/backend';

export default class BertTokenize {
  private encoder!: EncoderTokenizer;
  private padId = 0;
  private multiple = 1;

  async initialize(args: InitializeArgs): Promise<void> {
    this.encoder = await loadTokenizer(args.model_version_dir);
    this.padId = this.encoder.tokenizer.token_to_id('[PAD]') ?? 0;
    this.multiple = Number(args.model_config.parameters['pad_to_multiple_of']?.string_value ?? '1');
  }

  execute(requests: readonly ModelRequest[]): ModelResponse[] {
    return requests.map((request) => {
      try {
        return { outputs: this.tokenize(asStrings(request.input('TEXT'))) };
      } catch (error) {
        return { error: error as Error };
      }
    });
  }

  private tokenize(texts: readonly string[]): ReturnType<typeof tensor>[] {
    const rows = texts.map((text, i) => {
      const ids = this.encoder.tokenizer.encode(text, { add_special_tokens: true }).ids;
      if (ids.length > this.encoder.maxLength) {
        throw new InferenceError(`input 'TEXT'[${i}] has ${ids.length} tokens; bert-tiny takes at most ${this.encoder.maxLength}`, 'INVALID_ARG');
      }
      return ids;
    });
    const longest = Math.max(...rows.map((r) => r.length));
    const width = Math.ceil(longest / this.multiple) * this.multiple;
    const ids = new BigInt64Array(rows.length * width).fill(BigInt(this.padId));
    const mask = new BigInt64Array(rows.length * width);
    rows.forEach((row, r) =>
      row.forEach((id, t) => {
        ids[r * width + t] = BigInt(id);
        mask[r * width + t] = 1n;
      }),
    );
    const shape = [rows.length, width];
    return [
      tensor('input_ids', 'INT64', shape, ids),
      tensor('attention_mask', 'INT64', shape, mask),
      tensor('token_type_ids', 'INT64', shape, new BigInt64Array(rows.length * width)),
      tensor(
        'num_tokens',
        'INT64',
        [rows.length, 1],
        rows.map((r) => BigInt(r.length)),
      ),
    ];
  }
}
