// Character classes beyond ASCII, which xgrammar 0.1.27 cannot read as written (a class element
// at or below U+00FF is a byte, one above is truncated to its low byte): regex-ebnf.ts writes
// their non-ASCII part as UTF-8 byte sequences. Held here to the code points themselves (the
// sequences cover exactly the range) and, through xgrammar, to ECMAScript's matcher on code
// points at and around every boundary a class has.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { regexSpecGrammar, utf8ByteRanges } from '../../../src/grammar/regex-ebnf.js';
import { schemaGrammar } from '../../../src/grammar/schema-grammar.js';
import { loadXGrammar } from '../../../src/grammar/xgrammar-module.js';

const xgrammar = loadXGrammar();
const encoder = new TextEncoder();
const isSurrogate = (code: number): boolean => code >= 0xd800 && code <= 0xdfff;

async function accepts(ebnf: string, text: string): Promise<boolean> {
  const grammar = await xgrammar.api.Grammar.fromEBNF(ebnf);
  try {
    return await xgrammar.api.Testings.isGrammarAcceptString(grammar, text);
  } finally {
    grammar.dispose();
  }
}

describe('UTF-8 byte sequences of a code point range', () => {
  it('cover exactly the range: a code point is in it when its bytes fall in one sequence', () => {
    const code = fc.integer({ min: 0x80, max: 0x10ffff }).filter((c) => !isSurrogate(c));
    fc.assert(
      fc.property(code, code, code, (a, b, probe) => {
        const [lo, hi] = a <= b ? [a, b] : [b, a];
        const sequences = utf8ByteRanges(lo, hi);
        const bytes = [...encoder.encode(String.fromCodePoint(probe))];
        const covered = sequences.some((seq) => seq.length === bytes.length && seq.every(([from, to], i) => bytes[i]! >= from && bytes[i]! <= to));
        expect(covered, `${lo.toString(16)}..${hi.toString(16)} at ${probe.toString(16)}`).toBe(probe >= lo && probe <= hi);
      }),
      { numRuns: 2000, seed: 27 },
    );
  });
});

describe('classes beyond ASCII through xgrammar', () => {
  // `\S` and `[^\s]` (JSONSchemaBench's commonest refused pattern), non-ASCII ranges, a negated non-ASCII letter.
  const CLASSES = ['[^\\s]', '\\S', '[\\u0100-\\u07FF]', '[^é]', '[^a-z\\u00e9\\u4e00]', '[\\u4e00-\\u9fa5]', '[à-ÿ]', '[^\\u2028\\u3000-\\u303F]'];
  const near = [
    0x7f, 0x80, 0x85, 0x9f, 0xa0, 0xa1, 0xe9, 0xff, 0x100, 0x7ff, 0x800, 0x1680, 0x2000, 0x200a, 0x200b, 0x2028, 0x2029, 0x202f, 0x3000, 0x3001, 0x303f, 0x3040, 0x4e00, 0x9fa5, 0x9fa6, 0xfeff, 0xffff,
    0x10000, 0x1f642, 0x10ffff,
  ];
  const probes = [...new Set(near.flatMap((c) => [c - 1, c, c + 1]))].filter((c) => c >= 0x20 && c <= 0x10ffff && !isSurrogate(c) && c !== 0x22 && c !== 0x5c);

  it.each(CLASSES)('%s: a regex spec matches a code point exactly when ECMAScript does', async (cls) => {
    const grammar = regexSpecGrammar(cls);
    const regex = new RegExp(`^${cls}$`, 'u');
    for (const code of probes) {
      const text = String.fromCodePoint(code);
      expect(await accepts(grammar, text), `U+${code.toString(16)}`).toBe(regex.test(text));
    }
  });

  it('a string pattern of them: ^\\S+$ takes non-ASCII text and no Unicode space', async () => {
    const grammar = schemaGrammar({ type: 'string', pattern: '^\\S+$' }, { absentAdditionalProperties: 'forbid' });
    for (const [text, valid] of [
      ['ab中🙂é', true],
      ['a\u00a0b', false],
      ['\u3000', false],
      ['a\u2028', false],
      ['x', true],
    ] as const)
      expect(await accepts(grammar, JSON.stringify(text)), JSON.stringify(text)).toBe(valid);
  });
});
