import { beforeAll, describe, expect, it } from 'vitest';
import type { TextTokenizer } from '../../../src/contracts/tokenizer.js';
import { IncrementalDetokenizer } from '../../../src/engine-client/detokenizer.js';
import { StopStringMatcher } from '../../../src/engine-client/stop-strings.js';
import { IM_END, IM_START, qwen3Tokenizer } from '../../support/qwen3-fixture.js';

let tokenizer: TextTokenizer;
beforeAll(() => {
  tokenizer = qwen3Tokenizer();
});

const TEXTS = [
  'Hello 😀 world! 👨‍👩‍👧‍👦 family, 🇯🇵 flag, 👍🏽 tone, 🪿🫠🫶 rare ones, 𓀀 hieroglyph.',
  '你好，世界！今天天气很好。我们去公园散步吧。',
  '日本語のテキストと한국어 텍스트, then English again.',
  'Ünïcödé façade — naïve café; Ελληνικά, русский, עברית, العربية.',
  '𝔘𝔫𝔦𝔠𝔬𝔡𝔢 math 𝛑 ≈ 3.14159, 🧑🏿‍🚀 astronaut, 🏳️‍🌈 flag.',
  'function f(x) {\n  return x ** 2; // ✓\n}\n\n\tTabs and  spaces.',
];

/** Every id of `text`, pushed one step at a time (or in chunks); the deltas, the flush, and the full decode. */
function stream(ids: number[], chunk = 1, skipSpecialTokens = true): { deltas: string[]; flushed: string; full: string; detok: IncrementalDetokenizer } {
  const detok = new IncrementalDetokenizer(tokenizer, { skipSpecialTokens });
  const deltas: string[] = [];
  for (let i = 0; i < ids.length; i += chunk) deltas.push(detok.push(ids.slice(i, i + chunk)));
  const flushed = detok.flush();
  return { deltas, flushed, full: tokenizer.decode(ids, { skip_special_tokens: skipSpecialTokens }), detok };
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

describe('IncrementalDetokenizer with the Qwen3 tokenizer', () => {
  it('the test texts really split characters across tokens', () => {
    const ids = tokenizer.encode(TEXTS.join('')).ids;
    const broken = ids.filter((id) => tokenizer.decode([id]).includes('\uFFFD'));
    expect(broken.length).toBeGreaterThan(10);
  });

  for (const text of TEXTS) {
    it(`streams ${JSON.stringify(text.slice(0, 24))}… token by token without a broken character`, () => {
      const ids = tokenizer.encode(text, { add_special_tokens: false }).ids;
      const { deltas, flushed, full } = stream(ids);
      expect(full).toBe(text);
      expect(deltas.join('') + flushed).toBe(full);
      expect(flushed).toBe('');
      for (const delta of deltas) {
        expect(delta).not.toContain('\uFFFD');
        expect(delta).not.toMatch(LONE_SURROGATE);
      }
    });
  }

  it('gives the same text whatever the number of tokens per step', () => {
    const ids = tokenizer.encode(TEXTS.join(' '), { add_special_tokens: false }).ids;
    for (const chunk of [2, 3, 7]) {
      const { deltas, flushed, full } = stream(ids, chunk);
      expect(deltas.join('') + flushed).toBe(full);
      expect(deltas.some((d) => d.includes('\uFFFD'))).toBe(false);
    }
  });

  it('holds an incomplete character until its last byte arrives', () => {
    const ids = tokenizer.encode('🪿', { add_special_tokens: false }).ids;
    expect(ids.length).toBeGreaterThan(1);
    const detok = new IncrementalDetokenizer(tokenizer);
    const deltas = ids.map((id) => detok.push([id]));
    expect(deltas.slice(0, -1).every((d) => d === '')).toBe(true);
    expect(deltas[deltas.length - 1]).toBe('🪿');
  });

  it('releases the complete prefix of a step and holds only the split character', () => {
    const prefix = tokenizer.encode('ok ', { add_special_tokens: false }).ids;
    const emoji = tokenizer.encode('🪿', { add_special_tokens: false }).ids;
    const detok = new IncrementalDetokenizer(tokenizer);
    expect(detok.push([...prefix, emoji[0]!])).toBe('ok ');
    expect(detok.push(emoji.slice(1))).toBe('🪿');
  });

  it('handles skip_special_tokens', () => {
    const ids = [IM_START, ...tokenizer.encode('assistant\nHi 🌍', { add_special_tokens: false }).ids, IM_END];
    expect(stream(ids, 1, true).detok.output).toBe('assistant\nHi 🌍');
    expect(stream(ids, 1, false).detok.output).toBe('<|im_start|>assistant\nHi 🌍<|im_end|>');
  });

  it('uses prompt ids as context without emitting them', () => {
    const prompt = tokenizer.encode('Say hi:', { add_special_tokens: false }).ids;
    const output = tokenizer.encode(' 你好 👋', { add_special_tokens: false }).ids;
    const detok = new IncrementalDetokenizer(tokenizer, { contextTokenIds: prompt });
    const text = output.map((id) => detok.push([id])).join('') + detok.flush();
    expect(text).toBe(' 你好 👋');
  });

  it('ignores prompt context that ends mid-character', () => {
    const goose = tokenizer.encode('🪿', { add_special_tokens: false }).ids;
    const detok = new IncrementalDetokenizer(tokenizer, { contextTokenIds: goose.slice(0, -1) });
    const out = detok.push(goose.slice(-1)) + detok.push(tokenizer.encode(' ok', { add_special_tokens: false }).ids) + detok.flush();
    expect(out).not.toMatch(LONE_SURROGATE);
    expect(out.endsWith(' ok')).toBe(true);
  });

  it('flushes bytes that never complete as U+FFFD at the end', () => {
    const emoji = tokenizer.encode('🪿', { add_special_tokens: false }).ids;
    const detok = new IncrementalDetokenizer(tokenizer);
    const ids = [...tokenizer.encode('cut ', { add_special_tokens: false }).ids, emoji[0]!];
    expect(detok.push(ids)).toBe('cut ');
    expect(detok.flush()).toMatch(/^\uFFFD+$/);
  });

  it('emits invalid bytes once later text shows they will never complete', () => {
    // The first byte of a 4-byte sequence followed by plain text is invalid UTF-8 for good.
    const lead = tokenizer.encode('🪿', { add_special_tokens: false }).ids[0]!;
    const detok = new IncrementalDetokenizer(tokenizer);
    expect(detok.push([lead])).toBe('');
    const word = tokenizer.encode('abc', { add_special_tokens: false }).ids;
    const out = detok.push(word);
    expect(out.endsWith('abc')).toBe(true);
    expect(out).toContain('\uFFFD');
  });

  it('releases a run of invalid bytes as it goes, on a bounded window', () => {
    // Leads of a 4-byte character, each cut short by the next: never a character, always a U+FFFD tail.
    const lead = tokenizer.encode('🪿', { add_special_tokens: false }).ids[0]!;
    let widest = 0;
    const spy = {
      decode: (ids: number[], options?: { skip_special_tokens?: boolean }): string => {
        widest = Math.max(widest, ids.length);
        return tokenizer.decode(ids, options);
      },
    };
    const detok = new IncrementalDetokenizer(spy);
    const deltas = Array.from({ length: 200 }, () => detok.push([lead]));
    const flushed = detok.flush();
    expect(deltas.join('') + flushed).toBe(tokenizer.decode(Array.from({ length: 200 }, () => lead)));
    // Invalid bytes are final once something follows them; only the last few replacements wait.
    expect(deltas.join('')).toBe('\uFFFD'.repeat(197));
    expect(widest).toBeLessThan(20);
  });
});

/** The id of the single-byte token for `byte` in GPT-2's byte-level alphabet (printable Latin-1 maps to itself, the rest to U+0100 on). */
function byteToken(byte: number): number {
  const printable = (b: number): boolean => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  let code = byte;
  if (!printable(byte)) {
    code = 256;
    for (let b = 0; b < byte; b++) if (!printable(b)) code++;
  }
  return tokenizer.token_to_id(String.fromCharCode(code))!;
}

describe('IncrementalDetokenizer on id runs a model could sample but the tokenizer would not produce', () => {
  it('streams a chain of tokens that each finish one character and start the next, never splitting one', () => {
    // U+D564 is ED 95 A4; Qwen3 has a token for the bytes "A4 ED" (the end of one, the start of the next).
    expect(tokenizer.decode([44680])).toMatch(/^\uFFFD+$/);
    const ids = [byteToken(0xed), byteToken(0x95)];
    for (let i = 1; i < 60; i++) ids.push(44680, byteToken(0x95));
    ids.push(byteToken(0xa4));
    const { deltas, flushed, full } = stream(ids);
    expect(full).toBe('핤'.repeat(60));
    expect(deltas.join('') + flushed).toBe(full);
    expect(deltas.some((d) => d.includes('\uFFFD'))).toBe(false);
    // Released as it goes, one character behind.
    expect(deltas.slice(0, 40).join('').length).toBeGreaterThan(15);
  });
});

describe('stop strings on the detokenized stream', () => {
  function generate(text: string, stops: string[], include = false): { emitted: string; stopped: string | null; tokensUsed: number } {
    const ids = tokenizer.encode(text, { add_special_tokens: false }).ids;
    const detok = new IncrementalDetokenizer(tokenizer);
    const matcher = new StopStringMatcher(stops, include);
    let emitted = '';
    for (let i = 0; i < ids.length; i++) {
      const out = matcher.push(detok.push([ids[i]!]));
      emitted += out.text;
      if (out.stopped) return { emitted, stopped: out.stopped, tokensUsed: i + 1 };
    }
    emitted += matcher.push(detok.flush()).text + matcher.flush();
    return { emitted, stopped: null, tokensUsed: ids.length };
  }

  it('matches a stop string spanning several tokens and stops at the token completing it', () => {
    const text = 'The answer is 42.\n\nUser: what next?';
    const r = generate(text, ['\n\nUser:']);
    expect(r).toMatchObject({ emitted: 'The answer is 42.', stopped: '\n\nUser:' });
    expect(r.tokensUsed).toBeLessThan(tokenizer.encode(text, { add_special_tokens: false }).ids.length);
    expect(generate(text, ['\n\nUser:'], true).emitted).toBe('The answer is 42.\n\nUser:');
  });

  it('matches inside a token and across split emoji and CJK bytes', () => {
    expect(generate('Hello world, goodbye world', ['bye'])).toMatchObject({ emitted: 'Hello world, good', stopped: 'bye' });
    expect(generate('好的 🦄 独角兽 end', ['🦄 独'])).toMatchObject({ emitted: '好的 ', stopped: '🦄 独' });
  });

  it('releases everything when no stop string completes', () => {
    expect(generate('almost STO', ['STOP'])).toEqual({ emitted: 'almost STO', stopped: null, tokensUsed: 3 });
  });
});
