// N-gram (prompt lookup) proposals for speculative decoding: text that repeats its input — an
// edited document, an answer quoting its context, tool arguments copied from a tool result —
// continues as it did after the last time its latest few tokens appeared. Pure: token ids in,
// proposed ids out.

/**
 * Up to `maxTokens` tokens that followed the most recent earlier occurrence of the sequence's
 * last n tokens, trying n from `maxN` down to `minN` (a longer match predicts better). Empty when
 * no suffix of those lengths occurred before. The most recent occurrence is taken: it is the
 * nearest context, which is what a copy continues.
 */
export function proposeNgram(tokens: ArrayLike<number>, minN: number, maxN: number, maxTokens: number): number[] {
  const length = tokens.length;
  if (maxTokens < 1) return [];
  for (let n = Math.min(maxN, length - 1); n >= minN; n--) {
    const suffixStart = length - n;
    // A match at `start` covers [start, start + n); it must end before the suffix itself does and leave a token after it.
    for (let start = suffixStart - 1; start >= 0; start--) {
      let k = 0;
      while (k < n && tokens[start + k] === tokens[suffixStart + k]) k++;
      if (k < n) continue;
      const from = start + n;
      const to = Math.min(from + maxTokens, length);
      const proposal: number[] = [];
      for (let i = from; i < to; i++) proposal.push(tokens[i]!);
      return proposal;
    }
  }
  return [];
}
