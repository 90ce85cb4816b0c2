// Where a JSON value starts inside free text, for the string guard (string-guard.ts): tool calls
// under tool_choice auto are free text, then calls each after an opener (`<tool_call>` and its
// padding), so the guard reads the text for the opener and follows JSON only after it. A
// Knuth–Morris–Pratt scan: the bytes of the opener matched so far, one byte at a time, exact
// whatever the opener repeats. Pure.

/** An opener's bytes, and for each prefix the longest proper prefix that is also its suffix. */
export interface GuardOpener {
  readonly bytes: Uint8Array;
  readonly fallback: Int32Array;
}

export function guardOpener(text: string): GuardOpener {
  const bytes = new TextEncoder().encode(text);
  if (bytes.length === 0) throw new RangeError('an empty opener');
  const fallback = new Int32Array(bytes.length);
  for (let i = 1, k = 0; i < bytes.length; i++) {
    while (k > 0 && bytes[i] !== bytes[k]) k = fallback[k - 1]!;
    if (bytes[i] === bytes[k]) k++;
    fallback[i] = k;
  }
  return { bytes, fallback };
}

/** The opener's bytes matched after `byte`, given `matched` before it (bytes.length: the opener is complete). */
export function openerStep(opener: GuardOpener, matched: number, byte: number): number {
  let k = matched;
  while (k > 0 && opener.bytes[k] !== byte) k = opener.fallback[k - 1]!;
  return opener.bytes[k] === byte ? k + 1 : 0;
}
