// The grammar mask stage: a bitmask (bit (id & 31) of word (id >> 5) set when token id is
// allowed, xgrammar's layout) sets every disallowed logit to −∞ before anything else reads the
// row, so penalties, the draw and logprobs all see only what the grammar allows. Whole words of
// allowed tokens are skipped and whole words of disallowed ones filled at once, so either kind of
// mask costs about one pass over vocabSize / 32 words.

/** Sets the logits of tokens the mask does not allow to −∞, in place. Ids past the mask are disallowed. */
export function applyTokenMask(row: Float32Array, mask: Int32Array): void {
  const n = row.length;
  const words = Math.min(mask.length, Math.ceil(n / 32));
  for (let w = 0; w < words; w++) {
    const word = mask[w]!;
    if (word === -1) continue;
    const base = w * 32;
    const end = Math.min(base + 32, n);
    if (word === 0) {
      row.fill(-Infinity, base, end);
      continue;
    }
    for (let id = base; id < end; id++) if (((word >>> (id - base)) & 1) === 0) row[id] = -Infinity;
  }
  if (words * 32 < n) row.fill(-Infinity, words * 32);
}

/**
 * The argmax of row[0, n) under the mask — what applyTokenMask then argmax would return (the first
 * of equal maxima; 0 when no allowed logit exceeds −∞) — reading only the allowed ids and leaving
 * the row as it is: a restrictive mask costs a pass over its words, not over the row.
 */
export function maskedArgmax(row: Float32Array, mask: Int32Array, n: number): number {
  const words = Math.min(mask.length, Math.ceil(n / 32));
  let best = 0;
  let bestVal = Number.NEGATIVE_INFINITY;
  for (let w = 0; w < words; w++) {
    let word = mask[w]!;
    while (word !== 0) {
      const bit = 31 - Math.clz32(word & -word);
      word &= word - 1;
      const id = w * 32 + bit;
      if (id >= n) break;
      const x = row[id]!;
      if (x > bestVal) {
        bestVal = x;
        best = id;
      }
    }
  }
  return best;
}
