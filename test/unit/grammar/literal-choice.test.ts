// Choices between literal texts (enum values, listed multiples, vLLM's choice) written as a trie
// (ebnfLiteralChoice): xgrammar 0.1.27 reads a plain choice whose literals share a prefix and a
// suffix as a loop -- ("1.25" | "1.5") accepted "1.2225". Seeded random sets of texts over digits,
// dots and multi-byte characters that share their UTF-8 lead bytes; every probe (the members, and
// near misses made from them by repeating, dropping or inserting one character) is accepted exactly
// when it is a member, by xgrammar's own check of the grammar.
import { describe, expect, it } from 'vitest';
import { choiceGrammar } from '../../../src/grammar/grammar-spec.js';
import { loadXGrammar } from '../../../src/grammar/xgrammar-module.js';

const xgrammar = loadXGrammar();
const ALPHABET = ['1', '2', '5', '.', 'a', '本', '末', 'é', 'è'];

function seeded(seed: number): (n: number) => number {
  let state = seed;
  return (n) => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return Math.floor((state / 2147483648) * n);
  };
}

/** Near misses of a text: one character repeated, dropped, or one of the alphabet inserted. */
function nearMisses(text: string, next: (n: number) => number): string[] {
  const chars = [...text];
  const at = next(chars.length + 1);
  return [
    [...chars.slice(0, at), chars[at] ?? '', ...chars.slice(at)].join(''),
    [...chars.slice(0, at), ...chars.slice(at + 1)].join(''),
    [...chars.slice(0, at), ALPHABET[next(ALPHABET.length)]!, ...chars.slice(at)].join(''),
  ];
}

describe('choices of literals', () => {
  it('("1.25" | "1.5") and ("abc5" | "ab5") accept only their members', async () => {
    for (const [choices, misses] of [
      [
        ['1.25', '1.5'],
        ['1.2225', '1.225', '1.55'],
      ],
      [
        ['abc5', 'ab5'],
        ['abcc5', 'abcbc5'],
      ],
      [
        ['1.25', '1.5', '1.75'],
        ['1.725', '1.7775', '1.275'],
      ],
    ] as const) {
      const grammar = await xgrammar.api.Grammar.fromEBNF(choiceGrammar(choices));
      try {
        for (const member of choices) expect(await xgrammar.api.Testings.isGrammarAcceptString(grammar, member), member).toBe(true);
        for (const miss of misses) expect(await xgrammar.api.Testings.isGrammarAcceptString(grammar, miss), miss).toBe(false);
      } finally {
        grammar.dispose();
      }
    }
  });

  it('random sets of texts: exactly the members are accepted', async () => {
    const next = seeded(2027);
    for (let round = 0; round < 40; round++) {
      const members = new Set<string>();
      const size = 2 + next(10);
      const stem = Array.from({ length: next(3) }, () => ALPHABET[next(ALPHABET.length)]!).join('');
      while (members.size < size) members.add(stem + Array.from({ length: 1 + next(4) }, () => ALPHABET[next(ALPHABET.length)]!).join(''));
      const grammar = await xgrammar.api.Grammar.fromEBNF(choiceGrammar([...members]));
      try {
        for (const member of members) {
          expect(await xgrammar.api.Testings.isGrammarAcceptString(grammar, member), `${[...members].join(' | ')}: ${member}`).toBe(true);
          for (const probe of nearMisses(member, next)) expect(await xgrammar.api.Testings.isGrammarAcceptString(grammar, probe), `${[...members].join(' | ')}: ${probe}`).toBe(members.has(probe));
        }
      } finally {
        grammar.dispose();
      }
    }
  });
});
