// The malformed and hostile requests a soak mixes into its load, one declaration each. Every one
// must be refused with a 4xx in its protocol's shape and leave the server, and every other
// request, untouched.

import { gzipSync } from 'node:zlib';
import type { SoakTarget } from './actors.js';

export interface BadRequest {
  readonly name: string;
  readonly path: (target: SoakTarget) => string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body: (target: SoakTarget) => string | Buffer;
}

const chat = (extra: (target: SoakTarget) => Record<string, unknown>): Pick<BadRequest, 'path' | 'body'> => ({
  path: () => '/v1/chat/completions',
  body: (target) => JSON.stringify({ model: target.llm, messages: [{ role: 'user', content: 'hi' }], max_tokens: 4, ...extra(target) }),
});

/** A BERT request of one sequence whose token ids are all `id`. */
const encoderTensors = (field: 'input_ids' | 'token_type_ids', value: number): string => {
  const tensor = (name: string, data: number[]) => ({ name, shape: [1, 8], datatype: 'INT64', data });
  const ids = Array(8).fill(101);
  return JSON.stringify({
    inputs: [
      tensor('input_ids', field === 'input_ids' ? Array(8).fill(value) : ids),
      tensor('attention_mask', Array(8).fill(1)),
      tensor('token_type_ids', field === 'token_type_ids' ? Array(8).fill(value) : Array(8).fill(0)),
    ],
  });
};

const deeplyNested = (depth: number): string => `{"inputs":[{"name":"input","shape":[1],"datatype":"FP32","data":${'['.repeat(depth)}1${']'.repeat(depth)}}]}`;

// Built once: 320 MiB of zeros (past the 256 MiB body limit), about 320 KiB compressed; the server
// must stop inflating at its limit instead of holding the whole thing.
let bomb: Buffer | undefined;
const gzipBomb = (): Buffer => (bomb ??= gzipSync(Buffer.alloc(320 * 2 ** 20), { level: 9 }));

export const BAD_REQUESTS: readonly BadRequest[] = [
  { name: 'malformed JSON', path: () => '/v1/chat/completions', body: () => '{"model": "qwen3-tiny", "messages": [' },
  { name: 'unknown model', ...chat(() => ({ model: 'no-such-model' })) },
  { name: 'negative max_tokens', ...chat(() => ({ max_tokens: -1 })) },
  { name: 'temperature as a word', ...chat(() => ({ temperature: 'hot' })) },
  { name: 'messages not a list', ...chat(() => ({ messages: 'hello' })) },
  { name: 'unknown field', ...chat(() => ({ frobnicate: true })) },
  { name: 'prompt past the context', ...chat(() => ({ messages: [{ role: 'user', content: 'word '.repeat(40_000) }] })) },
  { name: 'embeddings of nothing', path: () => '/v1/embeddings', body: (t) => JSON.stringify({ model: t.encoder, input: [] }) },
  { name: 'BERT token id past the vocabulary', path: (t) => `/v2/models/${t.encoder}/infer`, body: () => encoderTensors('input_ids', 10_000_000) },
  { name: 'BERT token type past the table', path: (t) => `/v2/models/${t.encoder}/infer`, body: () => encoderTensors('token_type_ids', 7) },
  {
    name: 'CNN tensor of the wrong shape',
    path: (t) => `/v2/models/${t.cnn}/infer`,
    body: () => JSON.stringify({ inputs: [{ name: 'input', shape: [1, 3, 2, 2], datatype: 'FP32', data: Array(12).fill(0) }] }),
  },
  { name: 'tensor nested 100,000 deep', path: (t) => `/v2/models/${t.cnn}/infer`, body: () => deeplyNested(100_000) },
  { name: 'gzip bomb', path: (t) => `/v2/models/${t.cnn}/infer`, headers: { 'content-encoding': 'gzip', 'content-type': 'application/json' }, body: gzipBomb },
];
