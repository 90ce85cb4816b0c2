// What the block pool tells the outside world about its prefix cache, as plain data: a block
// whose KV became shareable (stored), blocks that stopped being shareable (removed), and "the
// pool holds nothing" (cleared). The vocabulary is vLLM's KV events; src/kv-events encodes and
// publishes it. A subscriber that applies these in order holds exactly the pool's cached set.

import type { BlockHash } from './block-hash.js';

export type KvCacheEvent =
  | {
      readonly kind: 'stored';
      /** Consecutive blocks of one chain, first to last. */
      readonly blockHashes: readonly BlockHash[];
      /** The hash of the block before the first one; null when the first block starts its chain. */
      readonly parentBlockHash: BlockHash | null;
      /** The blocks' token ids, concatenated (blockHashes.length × blockSize). */
      readonly tokenIds: readonly number[];
      readonly blockSize: number;
    }
  | { readonly kind: 'removed'; readonly blockHashes: readonly BlockHash[] }
  | { readonly kind: 'cleared' };
