// The languages patterns are read as (regex-grammar.ts parses, regex-language.ts makes the
// language), held to ECMAScript's own matcher: a string is in a pattern's language (its
// derivatives taken character by character end nullable) exactly when `new RegExp(pattern,
// 'u').test(string)` finds a match in it, for generated patterns and strings. And the sequences
// it builds are no larger than they must be: an unanchored `.*`, or any loop beside a loop over
// every character, is written once as every string.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { derivative } from '../../../src/grammar/regex-derivative.js';
import type { RegexNode } from '../../../src/grammar/regex-grammar.js';
import { countLifted, nullable, patternLanguage, starSet } from '../../../src/grammar/regex-language.js';

const inLanguage = (node: RegexNode, text: string): boolean => nullable([...text].reduce((rest, ch) => derivative(rest, ch.codePointAt(0)!), node));

const PIECES = ['a', 'b', '.*', '[a-z]*', '[ab]+', 'x?', '(a|b)', '[^b]*', '\\d*', '(ab)*', '.+', 'é*'];
const pattern = fc
  .tuple(fc.boolean(), fc.array(fc.constantFrom(...PIECES), { minLength: 1, maxLength: 4 }), fc.boolean())
  .map(([start, pieces, end]) => `${start ? '^' : ''}${pieces.join('')}${end ? '$' : ''}`);
const text = fc.array(fc.constantFrom('a', 'b', 'x', '1', '\n', 'é', '_'), { maxLength: 7 }).map((chars) => chars.join(''));

describe('pattern languages', () => {
  it('hold exactly the strings a search for the pattern matches in (ECMAScript, the u flag)', () => {
    fc.assert(
      fc.property(pattern, fc.array(text, { minLength: 1, maxLength: 12 }), (source, texts) => {
        const language = patternLanguage(source);
        const regex = new RegExp(source, 'u');
        for (const t of texts) expect(inLanguage(language, t), `${JSON.stringify(source)} on ${JSON.stringify(t)}`).toBe(regex.test(t));
      }),
      { numRuns: 400, seed: 37 },
    );
  });

  it('hold it too for alternatives each of which may be one group, anchors inside (`^$|(^\\S+$)`)', () => {
    const wrapped = fc.tuple(pattern, fc.constantFrom('', '(', '(?:')).map(([source, open]) => (open === '' ? source : `${open}${source})`));
    const alternation = fc.array(wrapped, { minLength: 1, maxLength: 3 }).map((parts) => parts.join('|'));
    fc.assert(
      fc.property(alternation, fc.array(text, { minLength: 1, maxLength: 12 }), (source, texts) => {
        const language = patternLanguage(source);
        const regex = new RegExp(source, 'u');
        for (const t of texts) expect(inLanguage(language, t), `${JSON.stringify(source)} on ${JSON.stringify(t)}`).toBe(regex.test(t));
      }),
      { numRuns: 300, seed: 41 },
    );
  });

  it.each(['.*', '^[a-zA-Z0-9_]*', '[a-z]*$', 'x?'])('%s matches every string and is written as one loop over every character', (source) => {
    const language = patternLanguage(source);
    expect(starSet(language)).not.toBeNull();
    expect(inLanguage(language, 'any\nthing é')).toBe(true);
  });

  it('writes ^.*.*$ as one loop, still without line breaks', () => {
    const language = patternLanguage('^.*.*$');
    expect(starSet(language)).not.toBeNull();
    expect(inLanguage(language, 'ab')).toBe(true);
    expect(inLanguage(language, 'a\nb')).toBe(false);
  });

  it('keeps what a loop does not absorb: ^a.* is "a", then every string', () => {
    const language = patternLanguage('^a.*');
    expect(language.t).toBe('seq');
    expect(language.t === 'seq' && language.items.length).toBe(2);
    expect(inLanguage(language, 'a\n')).toBe(true);
    expect(inLanguage(language, 'ba')).toBe(false);
  });

  it('lifts a count only where the length alone then says what it said', () => {
    const lifted = countLifted(patternLanguage('^v[0-9]{2,12}\\.x$'))!;
    expect([lifted.min, lifted.max]).toEqual([5, 15]);
    // Open, the count no longer bounds; with the lengths it holds exactly the original strings.
    for (const text of ['v12.x', `v${'1'.repeat(12)}.x`, `v${'1'.repeat(13)}.x`, 'v1.x']) {
      const original = /^v[0-9]{2,12}\.x$/u.test(text);
      expect(inLanguage(lifted.node, text) && text.length >= lifted.min && text.length <= lifted.max, text).toBe(original);
    }
    // Two counts, an alternation, an unanchored side, a count on a group: no single length decides.
    for (const source of ['^[a-z]{1,9}-[0-9]{1,9}$', '^(a{1,20}|b)$', '[a-z]{1,20}$', '^(ab){1,20}$', '^[a-z]+$']) expect(countLifted(patternLanguage(source)), source).toBeNull();
  });
});
