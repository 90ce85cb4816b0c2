import { describe, expect, it } from 'vitest';
import { hashBlock, rootHash } from '../../../src/kv-cache/block-hash.js';
import { randomTokens, rng } from '../../support/fake-model.js';

describe('block hashing', () => {
  it('is deterministic and a non-negative integer below 2^53', () => {
    const tokens = [1, 2, 3, 4];
    const h = hashBlock(rootHash(null), tokens, 0, 4);
    expect(h).toBe(hashBlock(rootHash(null), [...tokens], 0, 4));
    expect(Number.isSafeInteger(h) && h >= 0).toBe(true);
  });

  it('chains: the same block after a different parent hashes differently', () => {
    const a = [1, 2, 3, 4, 9, 9, 9, 9];
    const b = [1, 2, 3, 5, 9, 9, 9, 9];
    const root = rootHash(null);
    expect(hashBlock(root, a, 4, 4)).toBe(hashBlock(root, b, 4, 4)); // unchained content is equal…
    expect(hashBlock(hashBlock(root, a, 0, 4), a, 4, 4)).not.toBe(hashBlock(hashBlock(root, b, 0, 4), b, 4, 4));
  });

  it('separates salts (LoRA adapter, model variant) from each other and from no salt', () => {
    const roots = [rootHash(null), rootHash(''), rootHash('lora-a'), rootHash('lora-b')];
    expect(new Set(roots).size).toBe(4);
    const tokens = [7, 7, 7, 7];
    expect(new Set(roots.map((r) => hashBlock(r, tokens, 0, 4))).size).toBe(4);
  });

  it('does not collide over many random and near-identical blocks', () => {
    const next = rng(1);
    const seen = new Set<number>();
    const root = rootHash(null);
    for (let i = 0; i < 20_000; i++) seen.add(hashBlock(root, randomTokens(next, 16), 0, 16));
    // Blocks that differ in one position or by order.
    for (let i = 0; i < 5_000; i++) {
      const block = Array.from({ length: 16 }, () => 0);
      block[i % 16] = 1 + Math.floor(i / 16);
      seen.add(hashBlock(root, block, 0, 16));
    }
    expect(seen.size).toBe(25_000);
  });
});
