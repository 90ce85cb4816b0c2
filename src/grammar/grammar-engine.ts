// Compiles GrammarSpecs against one model's vocabulary and hands out per-request matchers. One
// per engine worker, built on the first constrained request (tokenizer info for a 151,936-token
// vocabulary takes ~0.3 s, which unconstrained deployments never pay).
//
// Every spec is first parsed on a disposable checker instance: xgrammar reports a bad spec by
// aborting its WASM instance (see xgrammar-module.ts), so only specs the checker accepted reach
// the instance that holds the tokenizer info and the live matchers. Compiled grammars and
// refusals are cached by the spec's canonical text.

import { readFile } from 'node:fs/promises';
import type * as XGrammar from '@mlc-ai/web-xgrammar';
import { type GrammarSpec, PROPERTY_ORDER_KEYWORD, PROPERTY_ORDERS, type PropertyOrder, type ToolCallsGrammar } from '../contracts/generate.js';
import { ConveyorError, invalidArg } from '../errors.js';
import { checkSpecLimits, choiceGrammar, specFeature, specKey } from './grammar-spec.js';
import { ConstraintMatcher } from './matcher.js';
import { regexSpecGrammar } from './regex-ebnf.js';
import { PatternUnsupported } from './regex-grammar.js';
import type { GuardPlan } from './json-schema/guard-places.js';
import { GuardVocabulary } from './guard-vocabulary.js';
import { jsonObjectGrammar, SchemaUnsupported, schemaGrammarPlan } from './schema-grammar.js';
import { toolCallsGrammarPlan } from './tool-call-grammar.js';
import { type TokenizerVocabulary, tokenBytes, tokenizerVocabulary } from './tokenizer-vocabulary.js';
import { Utf8Guard } from './utf8-guard.js';
import { TranslationTimeout, withinDeadline } from './translation-deadline.js';
import { fatalReason, loadXGrammar, type XGrammarApi, type XGrammarInstance } from './xgrammar-module.js';

type Grammar = XGrammar.Grammar;
type CompiledGrammar = XGrammar.CompiledGrammar;
type GrammarCompiler = XGrammar.GrammarCompiler;

export interface GrammarEngineOptions {
  /** The model's tokenizer.json. */
  readonly tokenizerPath: string;
  /** Logits row length (config.json vocab_size, padded past the tokenizer's ids). */
  readonly logitsVocabSize: number;
  /** Compiled grammars kept (least recently used dropped first). */
  readonly cacheSize?: number;
  /**
   * Run before a new grammar is compiled: rejects (INVALID_ARG) when the grammar's text must not
   * be compiled here, e.g. because a trial compile elsewhere ran past the compile bound.
   */
  readonly trialCompile?: (text: string, feature: string) => Promise<void>;
  /** The longest a spec's translation into grammar text may take (it holds the thread that serves masks), and the refusal past it. */
  readonly translationBound?: { readonly ms: number; readonly refusal: (feature: string) => Error };
}

export interface GrammarEngineStats {
  readonly tokenizerInfoMs: number;
  /** Compile times of cache misses that compiled, ms, in order (the last 1,000). */
  readonly compileMs: readonly number[];
  readonly cacheHits: number;
  readonly cacheMisses: number;
}

/** A compiled constraint, shared by every request with the same spec. */
export interface CompiledConstraint {
  readonly key: string;
  readonly compiled: CompiledGrammar;
  /** What the string guard enforces beside the grammar (null: nothing). */
  readonly guard: GuardPlan | null;
}

/** A spec's grammar text and the length plan that goes with it. */
export interface SpecGrammar {
  readonly text: string;
  readonly guard: GuardPlan | null;
}

/** The spec as EBNF text: this server's own translation for JSON (schema-grammar.ts) and regex (regex-ebnf.ts), the spec itself for EBNF. */
export function specGrammarText(spec: GrammarSpec): string {
  return specGrammar(spec).text;
}

/** The spec's grammar, with the length plan a JSON schema's bounded strings leave to the guard. */
export function specGrammar(spec: GrammarSpec): SpecGrammar {
  switch (spec.kind) {
    case 'json_object':
      // An object, as OpenAI's json_object promises.
      return { text: jsonObjectGrammar(), guard: null };
    case 'json_schema':
      return jsonSchemaGrammar(spec.schema);
    case 'choice':
      return { text: choiceGrammar(spec.choices), guard: null };
    case 'ebnf':
      return { text: spec.grammar, guard: null };
    case 'regex':
      return { text: regexGrammarText(spec.pattern), guard: null };
    case 'tool_calls':
      return toolCallsGrammar(spec.calls);
  }
}

/** A tool_calls spec's grammar and guard plan; INVALID_ARG naming what cannot be enforced (a function's schema keyword, a custom tool's construct). */
function toolCallsGrammar(calls: ToolCallsGrammar): SpecGrammar {
  try {
    return toolCallsGrammarPlan(calls);
  } catch (error) {
    if (error instanceof SchemaUnsupported) throw invalidArg(`a tool's parameters use a feature the grammar engine cannot enforce: ${error.message}`);
    if (error instanceof PatternUnsupported) throw invalidArg(`a custom tool's format cannot be enforced: ${error.message}`);
    throw error;
  }
}

/** A regex spec's grammar; INVALID_ARG naming the construct when it cannot be enforced. */
function regexGrammarText(pattern: string): string {
  try {
    return regexSpecGrammar(pattern);
  } catch (error) {
    if (error instanceof PatternUnsupported) throw invalidArg(`the regex cannot be compiled: ${error.message}`);
    throw error;
  }
}

/** A JSON schema's grammar; INVALID_ARG naming the keyword and its path when it cannot be enforced. */
export function jsonSchemaGrammarText(schemaText: string): string {
  return jsonSchemaGrammar(schemaText).text;
}

function jsonSchemaGrammar(schemaText: string): SpecGrammar {
  let schema: unknown;
  try {
    schema = JSON.parse(schemaText);
  } catch (error) {
    throw invalidArg(`the JSON schema is not valid JSON: ${(error as Error).message}`);
  }
  try {
    // Properties the schema does not name are not generated unless it says additionalProperties (xgrammar's strict mode, and OpenAI's rule).
    return schemaGrammarPlan(schema, { absentAdditionalProperties: 'forbid', guardStrings: true, propertyOrder: propertyOrderOf(schema) });
  } catch (error) {
    if (error instanceof SchemaUnsupported) throw invalidArg(`the JSON schema uses a feature the grammar engine cannot enforce: ${error.message}`);
    throw error;
  }
}

/** The schema's own choice of key order (PROPERTY_ORDER_KEYWORD at its top level; the vocabulary checks it first). */
function propertyOrderOf(schema: unknown): PropertyOrder {
  const order = typeof schema === 'object' && schema !== null && !Array.isArray(schema) ? (schema as Record<string, unknown>)[PROPERTY_ORDER_KEYWORD] : undefined;
  if (order === undefined) return 'schema';
  if ((PROPERTY_ORDERS as readonly unknown[]).includes(order)) return order as PropertyOrder;
  throw invalidArg(`the JSON schema's "${PROPERTY_ORDER_KEYWORD}" must be "schema" or "any", got ${JSON.stringify(order)}`);
}

/** The spec's EBNF text as an xgrammar Grammar, on the given instance. Aborts that instance when the text is invalid. */
function toGrammar(api: XGrammarApi, text: string): Promise<Grammar> {
  return api.Grammar.fromEBNF(text);
}

export class GrammarEngine {
  private checker: XGrammarInstance | null = null;
  private readonly cache = new Map<string, Promise<CompiledConstraint>>();
  /** Specs vetted (or being vetted) but not yet compiled: their grammar text. */
  private readonly vetted = new Map<string, Promise<SpecGrammar>>();
  private vetQueue: Promise<unknown> = Promise.resolve();
  private readonly cacheSize: number;
  private readonly compileTimes: number[] = [];
  private hits = 0;
  private misses = 0;

  private constructor(
    private readonly main: XGrammarInstance,
    private readonly compiler: GrammarCompiler,
    private readonly tokenizerInfoMs: number,
    private readonly vocabSize: number,
    private readonly utf8: Utf8Guard,
    private readonly guardVocabulary: GuardVocabulary,
    cacheSize: number,
    private readonly trial: GrammarEngineOptions['trialCompile'],
    private readonly translationBound: GrammarEngineOptions['translationBound'],
  ) {
    this.cacheSize = cacheSize;
  }

  static async open(options: GrammarEngineOptions): Promise<GrammarEngine> {
    const json = JSON.parse(await readFile(options.tokenizerPath, 'utf8')) as Parameters<typeof tokenizerVocabulary>[0];
    return GrammarEngine.forVocabulary(tokenizerVocabulary(json), options);
  }

  /** The engine over a vocabulary already read (tests build random ones). */
  static async forVocabulary(vocabulary: TokenizerVocabulary, options: Omit<GrammarEngineOptions, 'tokenizerPath'>): Promise<GrammarEngine> {
    const { tokens, vocabType, endTokenIds } = vocabulary;
    const vocabSize = Math.max(options.logitsVocabSize, tokens.length);
    const main = loadXGrammar();
    const started = performance.now();
    const info = await main.api.TokenizerInfo.createTokenizerInfo([...tokens], vocabType, false, vocabSize, [...endTokenIds]);
    // xgrammar's own compiler cache keeps every grammar it compiled, without bound (its WASM memory
    // grew ~0.5 MiB a compile over Github_medium's schemas; a run of ~1,900 distinct schemas left the
    // probe's instance aborting every compile after): the engine's own LRU cache (cacheSize) is the one.
    const compiler = await main.api.GrammarCompiler.createGrammarCompiler(info, false);
    const bytes = tokens.map((text) => tokenBytes(text, vocabType));
    const utf8 = Utf8Guard.build(bytes, vocabSize);
    return new GrammarEngine(
      main,
      compiler,
      performance.now() - started,
      vocabSize,
      utf8,
      new GuardVocabulary(bytes, vocabSize),
      options.cacheSize ?? 256,
      options.trialCompile,
      options.translationBound,
    );
  }

  /** Compiles (or finds cached) a spec; rejects with INVALID_ARG naming the feature when xgrammar refuses it. */
  compile(spec: GrammarSpec): Promise<CompiledConstraint> {
    const key = specKey(spec);
    const cached = this.cache.get(key);
    if (cached) {
      this.hits++;
      // Most recently used last, so eviction drops the stalest.
      this.cache.delete(key);
      this.cache.set(key, cached);
      return cached;
    }
    this.misses++;
    const compiling = this.compileNew(spec, key);
    this.cache.set(key, compiling);
    this.evict();
    return compiling;
  }

  /** A matcher for one request. `stopTokenIds` end the grammar (EOS and stop ids); empty: the tokenizer's end tokens. */
  async matcher(constraint: CompiledConstraint, stopTokenIds: readonly number[]): Promise<ConstraintMatcher> {
    const handle = await this.main.api.GrammarMatcher.createGrammarMatcher(constraint.compiled, stopTokenIds.length > 0 ? [...stopTokenIds] : undefined);
    return new ConstraintMatcher(handle, this.utf8, this.vocabSize, constraint.guard === null ? null : { plan: constraint.guard, vocabulary: this.guardVocabulary });
  }

  /** Compiles grammar text already checked and throws the result away: the compile time, ms. An error leaves the instance aborted (the probe thread that calls this is then replaced). */
  async trialCompile(text: string): Promise<number> {
    const started = performance.now();
    try {
      const grammar = await toGrammar(this.main.api, text);
      try {
        (await this.compiler.compileGrammar(grammar)).dispose();
        return performance.now() - started;
      } finally {
        grammar.dispose();
      }
    } catch (error) {
      // xgrammar's reason is in its log ("[FATAL] …"); the exception says only that it aborted.
      throw new Error(fatalReason(this.main.drainLog()) ?? (error instanceof Error ? error.message : String(error)));
    }
  }

  stats(): GrammarEngineStats {
    return { tokenizerInfoMs: this.tokenizerInfoMs, compileMs: [...this.compileTimes], cacheHits: this.hits, cacheMisses: this.misses };
  }

  /**
   * Frees the compiled grammars and the compiler; the WASM instances go with the last reference.
   * Matchers made from it must be disposed first. The engine is unusable afterwards.
   */
  async dispose(): Promise<void> {
    const compiled = [...this.cache.values()];
    this.cache.clear();
    for (const settled of await Promise.allSettled(compiled)) if (settled.status === 'fulfilled') settled.value.compiled.dispose();
    this.compiler.dispose();
    this.checker = null;
  }

  private async compileNew(spec: GrammarSpec, key: string): Promise<CompiledConstraint> {
    const vetted = this.vetted.get(key);
    this.vetted.delete(key);
    const { text, guard } = await (vetted ?? this.vetText(spec));
    const started = performance.now();
    const grammar = await toGrammar(this.main.api, text);
    try {
      const compiled = await this.compiler.compileGrammar(grammar);
      this.compileTimes.push(performance.now() - started);
      if (this.compileTimes.length > 1000) this.compileTimes.shift();
      return { key, compiled, guard };
    } finally {
      grammar.dispose();
    }
  }

  /**
   * Readies a spec for compile() without compiling it here: the limits, the translation, the
   * parse on the checker and the trial compile. While this runs (the trial can take up to the
   * compile bound) the engine keeps serving masks; compile() then only compiles. Cached specs
   * need nothing.
   */
  vet(spec: GrammarSpec): Promise<void> {
    const key = specKey(spec);
    if (this.cache.has(key)) return Promise.resolve();
    let vetting = this.vetted.get(key);
    if (!vetting) {
      // One at a time: they share the checker instance.
      vetting = this.vetQueue.then(() => this.vetText(spec));
      this.vetQueue = vetting.catch(() => null);
      this.vetted.set(key, vetting);
      const settled = vetting;
      settled.catch(() => {
        if (this.vetted.get(key) !== settled) return;
        this.vetted.delete(key);
        // A refusal is cached like a compiled grammar: the same spec again is refused at once.
        const refused = settled.then((): CompiledConstraint => {
          throw new Error('unreachable: the spec was refused');
        });
        refused.catch(() => {});
        this.cache.set(key, refused);
        this.evict();
      });
    }
    return vetting.then(() => {});
  }

  private async vetText(spec: GrammarSpec): Promise<SpecGrammar> {
    checkSpecLimits(spec);
    let grammar: SpecGrammar;
    try {
      grammar = withinDeadline(this.translationBound?.ms, () => specGrammar(spec));
    } catch (error) {
      if (error instanceof TranslationTimeout && this.translationBound) throw this.translationBound.refusal(specFeature(spec));
      throw error;
    }
    await this.check(spec, grammar.text);
    await this.trial?.(grammar.text, specFeature(spec));
    return grammar;
  }

  /** Parses the spec on the checker; an abort there costs only that instance, replaced on the next check. */
  private async check(spec: GrammarSpec, text: string): Promise<void> {
    this.checker ??= loadXGrammar();
    const checker = this.checker;
    try {
      (await toGrammar(checker.api, text)).dispose();
      checker.drainLog();
    } catch (error) {
      this.checker = null;
      const reason = fatalReason(checker.drainLog()) ?? (error instanceof Error ? error.message : String(error));
      throw invalidArg(`the ${specFeature(spec)} cannot be compiled: ${reason}`);
    }
  }

  private evict(): void {
    while (this.cache.size > this.cacheSize) {
      const [oldest, compiling] = this.cache.entries().next().value!;
      this.cache.delete(oldest);
      // A matcher keeps its own reference to the compiled grammar, so disposing the cache's is safe.
      compiling.then(
        (c) => c.compiled.dispose(),
        () => {},
      );
    }
  }
}

/** True when an error is xgrammar's refusal of a spec (INVALID_ARG), not an engine fault. */
export const isSpecError = (error: unknown): boolean => error instanceof ConveyorError && error.code === 'INVALID_ARG';
