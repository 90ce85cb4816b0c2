// The Lark subset a custom tool's grammar is translated from, to the grammar engine's EBNF, and
// the constructs refused by name rather than dropped.

import { describe, expect, it } from 'vitest';
import { larkToEbnf, regexToEbnf, UnsupportedLark } from '../../../openai-compat/lark-grammar.js';

describe('larkToEbnf', () => {
  it('translates rules, continuation alternatives, optionals, repeats, ranges and regex terminals', () => {
    const ebnf = larkToEbnf(['start: cmd (" " arg)~1..2 // trailing comment', '?cmd: "ls"', '    | "cat"', 'arg: WORD ["/" WORD]*', 'WORD.2: /[a-z_]{1,6}/ | "a".."c"'].join('\n'));
    expect(ebnf.split('\n')).toEqual(['root ::= l_start', 'l_start ::= l_cmd ((" " l_arg)){1,2}', 'l_cmd ::= "ls" | "cat"', 'l_arg ::= l_WORD (("/" l_WORD)?)*', 'l_WORD ::= (([a-z_]){1,6}) | [a-c]']);
  });

  it("imports Lark's common terminals, drops aliases and # comment lines (a patch tool's grammar)", () => {
    const patch = [
      'start: "*** Begin" LF edit+ "*** End" LF?',
      '# one edit per file',
      'edit: "+ " path LF line* -> added',
      '    | "- " path LF -> removed',
      'path: /(\\S+)/',
      'line: ">" /(.*)/ LF',
      '%import common.LF',
      '%import common (INT, WS_INLINE)',
    ].join('\n');
    expect(larkToEbnf(patch).split('\n')).toEqual([
      'root ::= l_start',
      'l_start ::= "*** Begin" l_LF (l_edit)+ "*** End" (l_LF)?',
      'l_edit ::= "+ " l_path l_LF (l_line)* | "- " l_path l_LF',
      'l_path ::= ((([^ \\t\\n\\r\\f\\v])+))',
      'l_line ::= ">" ((([^\\n])*)) l_LF',
      'l_LF ::= ("\\n")',
      'l_INT ::= (l_DIGIT)+',
      'l_DIGIT ::= [0-9]',
      'l_WS_INLINE ::= ((" " | ("\\t")))+',
    ]);
  });

  it('refuses what it cannot enforce, naming the construct', () => {
    for (const [definition, construct] of [
      ['start: A\n%ignore " "', 'directive %ignore'],
      ['start: "x"i', 'case-insensitive'],
      ['start: /x/i', 'regex flags'],
      ['start: y', 'undefined rule y'],
      ['expr: "x"', 'without a start rule'],
      ['start: list{x}', 'templates'],
      ['start: ESCAPED_STRING\n%import common.ESCAPED_STRING', '%import common.ESCAPED_STRING'],
      ['start: X\n%import other.X', '%import other.X'],
    ]) {
      expect(() => larkToEbnf(definition!)).toThrow(UnsupportedLark);
      expect(() => larkToEbnf(definition!)).toThrow(construct);
    }
  });
});

describe('regexToEbnf', () => {
  it('spells classes, escapes, groups and quantifiers in EBNF', () => {
    expect(regexToEbnf('^(?:ab|\\d+)[^\\s]x.?$')).toBe('("a" "b" | ([0-9])+) [^ \\t\\n\\r\\f\\v] "x" ([^\\n])?');
  });

  it('refuses lookaround, backreferences and inner anchors', () => {
    expect(() => regexToEbnf('a(?!b)')).toThrow('lookaround');
    expect(() => regexToEbnf('(a)\\1')).toThrow('backreferences');
    expect(() => regexToEbnf('a^b')).toThrow('anchors');
  });
});
