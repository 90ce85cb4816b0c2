// The grammar mask stage: a bitmask (bit (id & 31) of word (id >> 5) set when token id is
// allowed, xgrammar's layout) sets every disallowed logit to −∞ before anything else reads the
// row, so penalties, the draw and logprobs all see only what the grammar allows. Whole words of
// allowed tokens are skipped, so a permissive mask costs one pass over vocabSize / 32 words.

/** Sets the logits of tokens the mask does not allow to −∞, in place. Ids past the mask are disallowed. */
export function applyTokenMask(row: Float32Array, mask: Int32Array): void {
  const n = row.length;
  const words = Math.min(mask.length, Math.ceil(n / 32));
  for (let w = 0; w < words; w++) {
    const word = mask[w]!;
    if (word === -1) continue;
    const base = w * 32;
    const end = Math.min(base + 32, n);
    for (let id = base; id < end; id++) if (((word >>> (id - base)) & 1) === 0) row[id] = -Infinity;
  }
  if (words * 32 < n) row.fill(-Infinity, words * 32);
}
