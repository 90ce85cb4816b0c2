// Tool calls held as response_format schemas are: a function's parameters translated with the
// string guard beside the grammar (lengths past the grammar's counting, patterns' reach,
// uniqueItems), under tool_choice required (the output is the array of calls) and auto (free text,
// the guard following JSON only after each `<tool_call>` opener); and parameters generated with
// $defs / $ref (pydantic, zod) resolved against their own root. Over the tiny model's Qwen3
// vocabulary, token by token, as the server masks.
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GrammarSpec, ToolCallsFraming, ToolCallsGrammar } from '../../../src/contracts/generate.js';
import type { CompiledConstraint } from '../../../src/grammar/grammar-engine.js';
import { guardOpener, openerStep } from '../../../src/grammar/guard-opener.js';
import { rebaseRefs } from '../../../src/grammar/json-schema/rebase-refs.js';
import type { Json } from '../../../src/grammar/json-schema/schema-model.js';
import { layoutJson } from '../../../src/grammar/schema-grammar.js';
import { openQwen3Grammar, QWEN3_STOP, type Qwen3Grammar } from '../../support/qwen3-grammar.js';
import { seededRandom } from '../../support/seeded-random.js';

let grammar: Qwen3Grammar;
beforeAll(async () => {
  grammar = await openQwen3Grammar();
}, 120_000);
afterAll(async () => {
  await grammar?.engine.dispose();
});

const HERMES: ToolCallsFraming = { kind: 'blocks', open: '<tool_call>', close: '</tool_call>', padding: '\n', separator: '\n', maxCalls: null };
const SEARCH = {
  type: 'object',
  properties: {
    query: { type: 'string', minLength: 2, maxLength: 300 },
    tags: { type: 'array', items: { type: 'string', maxLength: 20 }, uniqueItems: true },
  },
  required: ['query', 'tags'],
  additionalProperties: false,
};
const tools = (framing: ToolCallsFraming, ...parameters: object[]): GrammarSpec => ({
  kind: 'tool_calls',
  calls: {
    framing,
    argumentsKey: 'arguments',
    tools: parameters.map((p, i) => ({ kind: 'function', name: `f${i}`, parameters: JSON.stringify(p) })),
  } satisfies ToolCallsGrammar,
});
const call = (name: string, args: Json): string => layoutJson({ name, arguments: args });
const block = (text: string): string => `<tool_call>\n${text}\n</tool_call>`;

describe('tool calls with the string guard', () => {
  it('required: a 300-character bound and distinct tags are the guard’s, the grammar compiled without counting', async () => {
    const spec = tools({ kind: 'array', maxCalls: null }, SEARCH);
    let compiled: CompiledConstraint | undefined;
    const accepts = (args: Json): Promise<boolean> => grammar.masksAcceptSpec(spec, `[${call('f0', args)}]`, (c) => (compiled = c));
    expect(await accepts({ query: 'q'.repeat(300), tags: ['a', 'b'] })).toBe(true);
    expect(compiled?.guard).not.toBeNull();
    expect(await accepts({ query: 'q'.repeat(301), tags: [] })).toBe(false);
    expect(await accepts({ query: 'q', tags: [] })).toBe(false);
    expect(await accepts({ query: 'ok', tags: ['a', 'b', 'a'] })).toBe(false);
    expect(await accepts({ query: 'ok', tags: ['x'.repeat(21)] })).toBe(false);
    // The second call of the array is held too.
    const two = `[${call('f0', { query: 'ok', tags: [] })}, ${call('f0', { query: 'é'.repeat(301), tags: [] })}]`;
    expect(await grammar.masksAcceptSpec(spec, two)).toBe(false);
  });

  it('auto: free text with quotes and braces is not read as JSON; each call after its opener is held', async () => {
    const spec = tools(HERMES, SEARCH, { type: 'object', properties: { id: { type: 'string', maxLength: 12 } }, required: ['id'] });
    // An odd number of quotes and open brackets: read as JSON, the calls after it would be misread.
    const prose = 'A 5" screen, {x: [1 and \\ a <tool and <tool_cal too.';
    const good = call('f0', { query: 'x'.repeat(300), tags: ['a'] });
    expect(await grammar.masksAcceptSpec(spec, prose)).toBe(true);
    expect(await grammar.masksAcceptSpec(spec, `${prose}${block(good)}`)).toBe(true);
    expect(await grammar.masksAcceptSpec(spec, `${prose}${block(good)}\n${block(call('f1', { id: 'abc' }))}`)).toBe(true);
    expect(await grammar.masksAcceptSpec(spec, `${prose}${block(call('f0', { query: 'x'.repeat(301), tags: [] }))}`)).toBe(false);
    expect(await grammar.masksAcceptSpec(spec, `${block(good)}\n${block(call('f1', { id: 'x'.repeat(13) }))}`)).toBe(false);
    expect(await grammar.masksAcceptSpec(spec, block(call('f0', { query: 'ok', tags: ['t', 't'] })))).toBe(false);
  });

  it('parameters with $defs and $ref (recursive, and a property named like a keyword) resolve against their own root', async () => {
    const tree = {
      $defs: {
        Node: { type: 'object', properties: { label: { $ref: '#/$defs/Label' }, children: { type: 'array', items: { $ref: '#/$defs/Node' } } }, required: ['label'] },
        Label: { type: 'string', maxLength: 40 },
      },
      type: 'object',
      properties: { root: { $ref: '#/$defs/Node' }, enum: { $ref: '#/properties/root' } },
      required: ['root'],
    };
    const spec = tools({ kind: 'array', maxCalls: 1 }, tree);
    const args = (label: string) => ({ root: { label: 'top', children: [{ label, children: [] }] }, enum: { label: 'e' } });
    expect(await grammar.masksAcceptSpec(spec, `[${call('f0', args('y'.repeat(40)))}]`)).toBe(true);
    expect(await grammar.masksAcceptSpec(spec, `[${call('f0', args('y'.repeat(41)))}]`)).toBe(false);
    expect(await grammar.masksAcceptSpec(spec, `[${call('f0', { root: { children: [] } })}]`)).toBe(false);
  });

  it('two tools bounding one key differently: the call’s name tells the guard which tool’s bounds hold', async () => {
    const bounded = (max: number) => ({ type: 'object', properties: { q: { type: 'string', maxLength: max } }, required: ['q'] });
    for (const framing of [{ kind: 'array', maxCalls: 1 } as const, HERMES]) {
      const spec = tools(framing, bounded(10), bounded(300), { type: 'object', properties: { q: { type: 'string' } } });
      const wrap = (text: string): string => (framing.kind === 'array' ? `[${text}]` : block(text));
      let compiled: CompiledConstraint | undefined;
      expect(await grammar.masksAcceptSpec(spec, wrap(call('f1', { q: 'z'.repeat(300) })), (c) => (compiled = c))).toBe(true);
      expect(compiled?.guard).not.toBeNull();
      expect(await grammar.masksAcceptSpec(spec, wrap(call('f1', { q: 'z'.repeat(301) })))).toBe(false);
      expect(await grammar.masksAcceptSpec(spec, wrap(call('f0', { q: 'z'.repeat(10) })))).toBe(true);
      expect(await grammar.masksAcceptSpec(spec, wrap(call('f0', { q: 'z'.repeat(11) })))).toBe(false);
      expect(await grammar.masksAcceptSpec(spec, wrap(call('f2', { q: 'z'.repeat(400) })))).toBe(true);
    }
  });

  it('a response_format union told apart by its leading constant: each branch’s bounds, not a refusal or a count', async () => {
    const branch = (type: string, max: number) => ({ type: 'object', properties: { type: { const: type }, text: { type: 'string', maxLength: max } }, required: ['type', 'text'] });
    const schema = { oneOf: [branch('short', 20), branch('long', 500)] };
    let compiled: CompiledConstraint | undefined;
    expect(await grammar.masksAccept(schema, { type: 'long', text: 'y'.repeat(500) }, (c) => (compiled = c))).toBe(true);
    expect(compiled?.guard).not.toBeNull();
    expect(await grammar.masksAccept(schema, { type: 'long', text: 'y'.repeat(501) })).toBe(false);
    expect(await grammar.masksAccept(schema, { type: 'short', text: 'y'.repeat(20) })).toBe(true);
    expect(await grammar.masksAccept(schema, { type: 'short', text: 'y'.repeat(21) })).toBe(false);
  });
});

describe('rolled back mid-call (rejected speculative tokens)', () => {
  it('auto: a rollback across the opener returns the guard to free text, and re-accepting restores the bounds', async () => {
    const spec = tools(HERMES, SEARCH);
    const constraint = await grammar.engine.compile(spec);
    const matcher = await grammar.engine.matcher(constraint, [QWEN3_STOP]);
    try {
      const head = grammar.encode(`Say "x{${block(call('f0', { query: 'q'.repeat(300), tags: [] })).slice(0, -60)}`);
      for (const id of head) expect(matcher.accept(id)).toBe(true);
      // Back past the opener into the prose, then forward again on the same tokens.
      const opener = grammar.encode(`Say "x{`).length;
      matcher.rollBack(head.length - opener);
      for (const id of head.slice(opener)) expect(matcher.accept(id)).toBe(true);
      // The rest of the 300 characters fit; one more does not.
      const used = grammar.decode(head).split('"query": "')[1]!.length;
      const rest = grammar.encode('q'.repeat(300 - used));
      for (const id of rest) expect(matcher.accept(id)).toBe(true);
      const [more] = grammar.encode('q');
      expect(matcher.accept(more!)).toBe(false);
    } finally {
      matcher.dispose();
    }
  });
});

describe('random walks under tool-call masks', () => {
  const twoTools = [
    {
      type: 'object',
      properties: { q: { type: 'string', minLength: 1, maxLength: 9 }, tags: { type: 'array', items: { type: 'string', maxLength: 3 }, uniqueItems: true, maxItems: 2 } },
      required: ['q'],
    },
    { type: 'object', properties: { q: { type: 'string', maxLength: 12 }, n: { type: 'integer', minimum: 0, maximum: 9 } }, required: ['q', 'n'] },
  ];
  const validators = twoTools.map((schema) => new Ajv2020({ strict: false }).compile(schema));

  /** Seeded walks from `prefix` (text accepted first): never a mask allowing nothing; each finished output's calls valid for their tools (ajv). */
  async function walk(spec: GrammarSpec, prefix: string, calls: (text: string) => Json[], seedBase: number): Promise<number> {
    const constraint = await grammar.engine.compile(spec);
    let checked = 0;
    for (let seed = 0; seed < 30; seed++) {
      const random = seededRandom(seedBase + seed);
      const matcher = await grammar.engine.matcher(constraint, [QWEN3_STOP]);
      const out = prefix === '' ? [] : grammar.encode(prefix);
      try {
        for (const id of out) expect(matcher.accept(id)).toBe(true);
        while (out.length < 200 && !matcher.isTerminated()) {
          const allowed = allowedIds(await matcher.nextTokenMask());
          expect(allowed.length, `seed ${seed}: ${out.length === 0 ? '' : grammar.decode(out)}`).toBeGreaterThan(0);
          const short = allowed.filter((id) => id < 256 || id === QWEN3_STOP);
          const id = short.length > 0 && random() < 0.9 ? short[Math.floor(random() * short.length)]! : allowed[Math.floor(random() * allowed.length)]!;
          expect(matcher.accept(id)).toBe(true);
          if (id !== QWEN3_STOP) out.push(id);
        }
        if (!matcher.isTerminated()) continue;
        for (const c of calls(grammar.decode(out))) {
          const { name, arguments: args } = c as { name: string; arguments: Json };
          const validate = validators[Number(name.slice(1))]!;
          expect(validate(args), `${name} ${JSON.stringify(args)}`).toBe(true);
          checked++;
        }
      } finally {
        matcher.dispose();
      }
    }
    return checked;
  }

  it('required: finished arrays hold calls valid for their tools, each tool’s bounds told apart by name', async () => {
    const checked = await walk(tools({ kind: 'array', maxCalls: 3 }, ...twoTools), '', (text) => JSON.parse(text) as Json[], 500);
    expect(checked).toBeGreaterThan(10);
  }, 120_000);

  it('auto: after prose and the opener, finished calls are valid for their tools', async () => {
    const prose = 'A 5" screen, {x: [1 and';
    const read = (text: string): Json[] =>
      text
        .split('<tool_call>\n')
        .slice(1)
        .map((block) => JSON.parse(block.split('\n</tool_call>')[0]!) as Json);
    const checked = await walk(tools(HERMES, ...twoTools), `${prose}<tool_call>\n`, read, 600);
    expect(checked).toBeGreaterThan(10);
  }, 120_000);
});

function allowedIds(mask: Int32Array): number[] {
  const ids: number[] = [];
  for (let w = 0; w < mask.length; w++) if (mask[w] !== 0) for (let b = 0; b < 32; b++) if ((mask[w]! >>> b) & 1) ids.push(w * 32 + b);
  return ids;
}

describe('rebaseRefs', () => {
  it('moves local references under the base and leaves data and other references alone', () => {
    const schema: Json = {
      $ref: '#',
      properties: { enum: { $ref: '#/$defs/A' }, const: { const: { $ref: '#/kept' } } },
      items: [{ $ref: '#/items/1' }, { enum: [{ $ref: '#/also-kept' }] }],
      default: { $ref: '#/kept' },
      allOf: [{ $ref: 'other.json#/a' }, { $ref: '#anchor' }],
    };
    expect(rebaseRefs(schema, '#/x/properties/arguments')).toEqual({
      $ref: '#/x/properties/arguments',
      properties: { enum: { $ref: '#/x/properties/arguments/$defs/A' }, const: { const: { $ref: '#/kept' } } },
      items: [{ $ref: '#/x/properties/arguments/items/1' }, { enum: [{ $ref: '#/also-kept' }] }],
      default: { $ref: '#/kept' },
      allOf: [{ $ref: 'other.json#/a' }, { $ref: '#anchor' }],
    });
  });
});

describe('guardOpener', () => {
  it('finds the opener wherever it ends, its own repeats included', () => {
    for (const [opener, text] of [
      ['<tool_call>\n', 'a <tool <tool_call <tool_call>\n'],
      ['aab', 'aaab'],
      ['abab', 'ababab'],
    ] as const) {
      const scan = guardOpener(opener);
      let matched = 0;
      const ends: number[] = [];
      for (const [i, byte] of [...new TextEncoder().encode(text)].entries()) {
        matched = openerStep(scan, matched, byte);
        if (matched === scan.bytes.length) {
          ends.push(i + 1);
          matched = 0;
        }
      }
      expect(ends, opener).toEqual([text.indexOf(opener) + opener.length]);
    }
  });
});
