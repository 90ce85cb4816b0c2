// The token-mask layout every thread shares (xgrammar's): bit (id & 31) of word (id >> 5) is set
// when token id is allowed. The grammar worker produces masks in it, the engine builds forced-token
// masks in it, and the sampler applies it.

/** Words a mask over `vocabSize` tokens takes. */
export const maskWords = (vocabSize: number): number => Math.ceil(vocabSize / 32);

/** Whether token `id` is allowed by a mask. */
export const maskAllows = (mask: Int32Array, id: number): boolean => ((mask[id >>> 5]! >>> (id & 31)) & 1) === 1;

/** Allows token `id` as well, in place. */
export function allowToken(mask: Int32Array, id: number): void {
  mask[id >>> 5] = mask[id >>> 5]! | (1 << (id & 31));
}

/** A mask over `vocabSize` tokens that allows `id` only. */
export function onlyToken(vocabSize: number, id: number): Int32Array {
  const mask = new Int32Array(maskWords(vocabSize));
  allowToken(mask, id);
  return mask;
}
