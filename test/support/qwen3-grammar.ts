// The grammar engine over the tiny model's Qwen3 tokenizer, as the server feeds a model's tokens:
// every token of an instance checked against the mask first, then accepted. One harness for the
// tests that hold schema grammars (and the string guard beside them) to ajv.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_REPOSITORY } from '../../models/default-repository.js';
import type { GrammarSpec } from '../../src/contracts/generate.js';
import { maskAllows } from '../../src/contracts/token-mask.js';
import { type CompiledConstraint, GrammarEngine } from '../../src/grammar/grammar-engine.js';
import { layoutJson } from '../../src/grammar/schema-grammar.js';
import { createTokenizer } from '../../src/tokenizer/model-files.js';

type Json = Parameters<typeof layoutJson>[0];

export const QWEN3_STOP = 151_645;

export interface Qwen3Grammar {
  readonly engine: GrammarEngine;
  encode(text: string): number[];
  decode(ids: number[]): string;
  /** Whether the masks allow the instance's tokens (in the grammar's layout), then the stop token, and the grammar ends there. */
  masksAccept(schema: unknown, instance: Json, onCompiled?: (constraint: CompiledConstraint) => void): Promise<boolean>;
  /** The same for a document's exact text (one a JS object cannot hold: a key twice). */
  masksAcceptText(schema: unknown, text: string, onCompiled?: (constraint: CompiledConstraint) => void): Promise<boolean>;
  /** The same for any spec (tool calls, a regex). */
  masksAcceptSpec(spec: GrammarSpec, text: string, onCompiled?: (constraint: CompiledConstraint) => void): Promise<boolean>;
}

export async function openQwen3Grammar(): Promise<Qwen3Grammar> {
  const modelDir = join(DEFAULT_REPOSITORY, 'qwen3-tiny', '1');
  const tokenizerPath = join(modelDir, 'tokenizer.json');
  const engine = await GrammarEngine.open({ tokenizerPath, logitsVocabSize: 151_936 });
  const tokenizer = createTokenizer({
    tokenizerJson: JSON.parse(readFileSync(tokenizerPath, 'utf8')),
    tokenizerConfig: JSON.parse(readFileSync(join(modelDir, 'tokenizer_config.json'), 'utf8')),
  });
  const encode = (text: string): number[] => [...tokenizer.encode(text, { add_special_tokens: false }).ids];
  const masksAcceptSpec = async (spec: GrammarSpec, text: string, onCompiled?: (constraint: CompiledConstraint) => void): Promise<boolean> => {
    const constraint = await engine.compile(spec);
    onCompiled?.(constraint);
    const matcher = await engine.matcher(constraint, [QWEN3_STOP]);
    try {
      for (const id of [...encode(text), QWEN3_STOP]) if (!maskAllows(await matcher.nextTokenMask(), id) || !matcher.accept(id)) return false;
      return matcher.isTerminated();
    } finally {
      matcher.dispose();
    }
  };
  const masksAcceptText = (schema: unknown, text: string, onCompiled?: (constraint: CompiledConstraint) => void): Promise<boolean> =>
    masksAcceptSpec({ kind: 'json_schema', schema: JSON.stringify(schema) }, text, onCompiled);
  return {
    engine,
    masksAcceptSpec,
    encode,
    decode: (ids) => tokenizer.decode(ids, { skip_special_tokens: true }),
    masksAccept: (schema, instance, onCompiled) => masksAcceptText(schema, layoutJson(instance), onCompiled),
    masksAcceptText,
  };
}
