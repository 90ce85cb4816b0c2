// Constrained output is always well-formed UTF-8. First the guard's state machine against the
// platform's strict decoder on every sequence class xgrammar lets through (overlong, surrogate,
// past U+10FFFF, a lone lead byte); then the property: over random byte-level vocabularies (every
// single byte, UTF-8 fragments cut anywhere, invalid byte runs), random walks that pick only
// tokens the mask allows never produce invalid UTF-8, never end a string, key or document inside
// a character, every allowed token is accepted, and no mask is empty before the grammar ends.
import { describe, expect, it } from 'vitest';
import type { GrammarSpec } from '../../../src/contracts/generate.js';
import { maskAllows } from '../../../src/contracts/token-mask.js';
import { GrammarEngine } from '../../../src/grammar/grammar-engine.js';
import { tokenBytes, type TokenizerVocabulary } from '../../../src/grammar/tokenizer-vocabulary.js';
import { UTF8_INVALID, Utf8Guard, Utf8State, utf8Walk } from '../../../src/grammar/utf8-guard.js';
import { seededRandom as rng } from '../../support/seeded-random.js';

const strict = () => new TextDecoder('utf-8', { fatal: true });

/** True when the bytes are a prefix of some well-formed UTF-8 text (the platform's decoder, streaming). */
function isUtf8Prefix(bytes: Uint8Array): boolean {
  try {
    strict().decode(bytes, { stream: true });
    return true;
  } catch {
    return false;
  }
}

describe('the UTF-8 state machine', () => {
  const bytes = (...b: number[]): Uint8Array => Uint8Array.from(b);
  const cases: [string, Uint8Array][] = [
    ['ASCII', bytes(0x41, 0x22)],
    ['é', bytes(0xc3, 0xa9)],
    ['€', bytes(0xe2, 0x82, 0xac)],
    ['U+0800 (E0 A0 80)', bytes(0xe0, 0xa0, 0x80)],
    ['U+D7FF (ED 9F BF)', bytes(0xed, 0x9f, 0xbf)],
    ['😀', bytes(0xf0, 0x9f, 0x98, 0x80)],
    ['U+10FFFF', bytes(0xf4, 0x8f, 0xbf, 0xbf)],
    ['overlong 4-byte (F0 82 80 80)', bytes(0xf0, 0x82, 0x80, 0x80)],
    ['overlong 3-byte (E0 80 80)', bytes(0xe0, 0x80, 0x80)],
    ['overlong 2-byte (C0 80)', bytes(0xc0, 0x80)],
    ['surrogate (ED A0 80)', bytes(0xed, 0xa0, 0x80)],
    ['past U+10FFFF (F4 90 80 80)', bytes(0xf4, 0x90, 0x80, 0x80)],
    ['F5 lead', bytes(0xf5, 0x80, 0x80, 0x80)],
    ['lone lead byte before a quote', bytes(0xc3, 0x22)],
    ['stray continuation', bytes(0x80)],
  ];
  it.each(cases)('%s: agrees with the strict decoder', (_name, input) => {
    const state = utf8Walk(Utf8State.COMPLETE, input);
    let decodes = true;
    try {
      strict().decode(input);
    } catch {
      decodes = false;
    }
    expect(state === Utf8State.COMPLETE).toBe(decodes);
    expect(state !== UTF8_INVALID).toBe(isUtf8Prefix(input));
  });

  it('agrees with the strict decoder on every 1–4 byte sequence over the boundary bytes', () => {
    const interesting = [0x22, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc1, 0xc2, 0xe0, 0xe1, 0xed, 0xf0, 0xf4, 0xf5];
    const disagreements: string[] = [];
    const check = (prefix: number[]): void => {
      const input = Uint8Array.from(prefix);
      if ((utf8Walk(Utf8State.COMPLETE, input) !== UTF8_INVALID) !== isUtf8Prefix(input)) disagreements.push(prefix.map((b) => b.toString(16)).join(' '));
      if (prefix.length < 4) for (const b of interesting) check([...prefix, b]);
    };
    check([]);
    expect(disagreements).toEqual([]);
  });

  it('allows a token that adds no bytes (a stop token) only on a character boundary', () => {
    const guard = Utf8Guard.build([bytes(0xc3), bytes(0xa9), bytes()], 3);
    expect(guard.after(Utf8State.COMPLETE, 2)).toBe(Utf8State.COMPLETE);
    expect(guard.after(Utf8State.NEED_1, 2)).toBe(UTF8_INVALID);
    expect(guard.after(Utf8State.NEED_1, 1)).toBe(Utf8State.COMPLETE);
    const mask = guard.restrict(Int32Array.of(-1), Utf8State.NEED_1);
    expect([0, 1, 2].filter((id) => maskAllows(mask, id))).toEqual([1]);
  });
});

describe('token bytes', () => {
  it('maps the byte-level alphabet back to bytes (Ġ is a space, Ċ a newline, Ã© is é)', () => {
    expect([...tokenBytes('Ġhi', 'byte_level')]).toEqual([0x20, 0x68, 0x69]);
    expect([...tokenBytes('Ċ', 'byte_level')]).toEqual([0x0a]);
    expect([...tokenBytes('Ã©', 'byte_level')]).toEqual([0xc3, 0xa9]);
    expect([...tokenBytes('<0xE2>', 'byte_fallback')]).toEqual([0xe2]);
    expect([...tokenBytes('▁é', 'byte_fallback')]).toEqual([0x20, 0xc3, 0xa9]);
  });
});

// ---- the property over random byte-level vocabularies ----

/** GPT-2's byte → character table, so random byte strings can be written as vocabulary entries. */
function byteLevelText(bytes: Uint8Array): string {
  const printable = (b: number): boolean => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  const table: string[] = [];
  let next = 0x100;
  for (let b = 0; b < 256; b++) table.push(String.fromCodePoint(printable(b) ? b : next++));
  return [...bytes].map((b) => table[b]).join('');
}

const SAMPLE_CHARS = ['a', 'z', ' ', '"', '\\', '{', '}', ':', ',', '0', '7', 'é', 'ß', 'ж', '€', '中', '文', '😀', '𝄞', '\u{10FFFF}', '\u0800', '\uD7FF'];

/**
 * Every single byte, then random tokens: UTF-8 text of the sample characters cut at random byte
 * offsets (so tokens start and end mid-character), and random raw byte runs (overlong forms,
 * surrogates, F5–FF and all). The last id is the end-of-text special token.
 */
function randomVocabulary(seed: number, extra: number): { vocabulary: TokenizerVocabulary; eos: number } {
  const random = rng(seed);
  const encoder = new TextEncoder();
  const entries = new Set<string>();
  for (let b = 0; b < 256; b++) entries.add(byteLevelText(Uint8Array.of(b)));
  while (entries.size < 256 + extra) {
    let bytes: Uint8Array;
    if (random() < 0.7) {
      const text = Array.from({ length: 1 + Math.floor(random() * 4) }, () => SAMPLE_CHARS[Math.floor(random() * SAMPLE_CHARS.length)]).join('');
      const whole = encoder.encode(text);
      const start = Math.floor(random() * whole.length);
      const end = start + 1 + Math.floor(random() * (whole.length - start));
      bytes = whole.slice(start, end);
    } else {
      bytes = Uint8Array.from({ length: 1 + Math.floor(random() * 4) }, () => 0x80 + Math.floor(random() * 0x80));
    }
    entries.add(byteLevelText(bytes));
  }
  const tokens = [...entries, ''];
  return { vocabulary: { tokens, vocabType: 'byte_level', endTokenIds: [tokens.length - 1] }, eos: tokens.length - 1 };
}

const SPECS: readonly { readonly name: string; readonly spec: GrammarSpec; readonly json: boolean }[] = [
  { name: 'json_object', spec: { kind: 'json_object' }, json: true },
  {
    name: 'schema: strings, an enum and a key pattern',
    spec: {
      kind: 'json_schema',
      schema: JSON.stringify({
        type: 'object',
        properties: { name: { type: 'string', maxLength: 6 }, city: { enum: ['Zürich', '東京', '😀'] }, tags: { type: 'array', items: { type: 'string' }, maxItems: 3 } },
        required: ['name', 'city', 'tags'],
        additionalProperties: { type: 'string' },
      }),
    },
    json: true,
  },
  // xgrammar's own regex converter truncated these to their low byte; the server's translation keeps them.
  { name: 'regex: a non-ASCII character class', spec: { kind: 'regex', pattern: '"[a-zé€😀中]{1,6}"' }, json: false },
  { name: 'regex: non-ASCII literals', spec: { kind: 'regex', pattern: '(Zürich|Genève|東京|😀)!' }, json: false },
  { name: 'regex: any characters', spec: { kind: 'regex', pattern: '.{1,8}' }, json: false },
  { name: 'EBNF: a negated character class', spec: { kind: 'ebnf', grammar: 'root ::= "\\"" [^"\\\\]* "\\""' }, json: false },
];

const VOCABULARIES = 3;
const WALKS = 25;
const TOKEN_CAP = 60;

describe('random walks over random byte-level vocabularies', () => {
  it.each(Array.from({ length: VOCABULARIES }, (_, i) => i))(
    'vocabulary %i: every constrained output is well-formed UTF-8, every allowed token is accepted',
    async (v) => {
      const { vocabulary, eos } = randomVocabulary(1000 + v, 1500);
      const bytesOf = vocabulary.tokens.map((t) => tokenBytes(t, 'byte_level'));
      const engine = await GrammarEngine.forVocabulary(vocabulary, { logitsVocabSize: vocabulary.tokens.length });
      try {
        let completed = 0;
        for (const [s, { name, spec, json }] of SPECS.entries()) {
          const constraint = await engine.compile(spec);
          for (let w = 0; w < WALKS; w++) {
            const random = rng(v * 1_000_000 + s * 1000 + w);
            const matcher = await engine.matcher(constraint, [eos]);
            const out: number[] = [];
            try {
              while (out.length < TOKEN_CAP) {
                const mask = await matcher.nextTokenMask();
                const allowed: number[] = [];
                for (let id = 0; id < vocabulary.tokens.length; id++) if (maskAllows(mask, id)) allowed.push(id);
                expect(allowed.length, `${name}: empty mask after ${out.join(',')}`).toBeGreaterThan(0);
                // Lean towards the end token when allowed, so walks finish within the cap.
                const id = allowed.includes(eos) && random() < 0.3 ? eos : allowed[Math.floor(random() * allowed.length)]!;
                expect(matcher.accept(id), `${name}: token ${id} allowed by the mask but refused after ${out.join(',')}`).toBe(true);
                if (matcher.isTerminated()) break;
                out.push(id);
                const sofar = concat(out.map((t) => bytesOf[t]!));
                expect(isUtf8Prefix(sofar), `${name}: ${[...sofar].map((b) => b.toString(16)).join(' ')}`).toBe(true);
              }
            } finally {
              matcher.dispose();
            }
            if (out.length === TOKEN_CAP) continue;
            completed++;
            const text = strict().decode(concat(out.map((t) => bytesOf[t]!)));
            if (json) expect(() => JSON.parse(text), `${name}: ${JSON.stringify(text)}`).not.toThrow();
            if (spec.kind === 'regex') expect(text, name).toMatch(new RegExp(`^(?:${spec.pattern})$`, 'u'));
          }
        }
        // The property says something only if walks do end.
        expect(completed).toBeGreaterThan(SPECS.length * WALKS * 0.5);
      } finally {
        await engine.dispose();
      }
    },
    120_000,
  );
});

function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
