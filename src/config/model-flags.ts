// The `serve --model` flags that set the generated config's llm parameters, declared once: the
// option parser, the USAGE text and the generated config.pbtxt read this table (vLLM's flag names;
// each value's vocabulary is the one the llm backend checks). A repository model sets these in
// its own config.pbtxt, so each flag needs --model.

import { KV_CACHE_DTYPES } from '../contracts/engine-messages.js';
import { ATTENTION_BACKENDS, PRECISION_NAMES, PRECISION_VARIANTS } from '../contracts/model-variants.js';

interface FlagSpecBase {
  readonly flag: string;
  /** The llm backend parameter the flag sets. */
  readonly parameter: string;
  /** The value's placeholder in USAGE. */
  readonly metavar: string;
  readonly help: string;
}

/** One of `choices` (`shown`, when given, is what USAGE lists: the canonical names without aliases). */
interface ChoiceFlag extends FlagSpecBase {
  readonly kind: 'choice';
  readonly choices: readonly string[];
  readonly shown?: readonly string[];
}

/** A positive integer. */
interface CountFlag extends FlagSpecBase {
  readonly kind: 'count';
}

/** A parser name: a plain word here (it is written into the config), checked against the parsers when the model loads. */
interface ParserFlag extends FlagSpecBase {
  readonly kind: 'parser';
  readonly example: string;
}

/** A JSON object (vLLM's JSON-valued flags); its members are checked by the llm backend when the model loads, naming the field. */
interface JsonFlag extends FlagSpecBase {
  readonly kind: 'json';
  readonly example: string;
}

export type ModelFlagSpec = ChoiceFlag | CountFlag | ParserFlag | JsonFlag;

export const MODEL_FLAGS = {
  precision: {
    flag: '--precision',
    parameter: 'precision',
    kind: 'choice',
    choices: PRECISION_NAMES,
    shown: PRECISION_VARIANTS.map((v) => v.precision),
    metavar: 'P',
    help: 'the ONNX variant served: onnx/model.onnx, model_fp16.onnx, model_quantized.onnx, model_q4.onnx, ... (default: the first the export has, in this order)',
  },
  attentionBackend: {
    flag: '--attention-backend',
    parameter: 'attention_backend',
    kind: 'choice',
    choices: ATTENTION_BACKENDS,
    metavar: 'NAME',
    help: 'how attention reads the KV cache: paged: onnx/model_paged*.onnx, through the native kernel where it loads; paged_onnx: that graph always; past_key_values: onnx/model*.onnx (default: paged where the export has the paged graph, else past_key_values)',
  },
  kvCacheDtype: {
    flag: '--kv-cache-dtype',
    parameter: 'kv_cache_dtype',
    kind: 'choice',
    choices: KV_CACHE_DTYPES,
    metavar: 'TYPE',
    help: "the KV cache's element type (default auto: the model's); fp16 and int8 need --attention-backend paged",
  },
  maxModelLen: {
    flag: '--max-model-len',
    parameter: 'max_model_len',
    kind: 'count',
    metavar: 'N',
    help: "context length served, prompt + generated tokens (default: the model's max_position_embeddings, which it may not exceed)",
  },
  maxNumSeqs: {
    flag: '--max-num-seqs',
    parameter: 'max_num_seqs',
    kind: 'count',
    metavar: 'N',
    help: 'sequences the scheduler runs at once (default 32); the rest wait',
  },
  toolCallParser: {
    flag: '--tool-call-parser',
    parameter: 'tool_call_parser',
    kind: 'parser',
    example: 'hermes',
    metavar: 'NAME',
    help: 'how the model writes tool calls: auto (the default: the format its chat template shows, logged at load), hermes (Qwen), llama3_json, pythonic (Llama 3.2), tool_code (Gemma), deepseek_v3, mistral; none found, tools with tool_choice auto are refused',
  },
  reasoningParser: {
    flag: '--reasoning-parser',
    parameter: 'reasoning_parser',
    kind: 'parser',
    example: 'qwen3',
    metavar: 'NAME',
    help: 'how the model marks its thinking: qwen3, deepseek_r1 (the thinking goes to reasoning_content instead of content)',
  },
  speculativeConfig: {
    flag: '--speculative-config',
    parameter: 'speculative_config',
    kind: 'json',
    example: '{"method": "ngram", "num_speculative_tokens": 4}',
    metavar: 'JSON',
    help: 'speculative decoding, as vLLM spells it: {"method": "ngram", "num_speculative_tokens": K, "prompt_lookup_min": N, "prompt_lookup_max": N, "disable_by_batch_size": N} or {"method": "draft_model", "model": DIR, "num_speculative_tokens": K, "quantization": VARIANT} (needs --attention-backend paged; default off)',
  },
} as const satisfies Record<string, ModelFlagSpec>;

export type ModelFlagName = keyof typeof MODEL_FLAGS;

/** A flag's parsed value: a count is a number, a choice one of its choices, a parser name or JSON text a string. */
type FlagValue<S> = S extends { readonly kind: 'count' } ? number : S extends { readonly choices: readonly (infer C)[] } ? C : string;

/** The --model flags given, by name; absent ones are left to the llm backend's defaults. */
export type ModelFlagValues = { readonly [K in ModelFlagName]?: FlagValue<(typeof MODEL_FLAGS)[K]> };

const MODEL_FLAG_SPECS = Object.entries(MODEL_FLAGS) as [ModelFlagName, ModelFlagSpec][];

/** parseArgs option declarations for every --model flag. */
export function modelFlagArgOptions(): Record<string, { type: 'string' }> {
  return Object.fromEntries(MODEL_FLAG_SPECS.map(([, spec]) => [spec.flag.slice(2), { type: 'string' as const }]));
}

const USAGE_COLUMN = 31;
const USAGE_WIDTH = 100;

/** The USAGE lines of every --model flag, in the table's order, in USAGE's two columns. */
export function modelFlagsUsage(): string {
  return MODEL_FLAG_SPECS.map(([, spec]) => {
    const choices = spec.kind === 'choice' ? `${(spec.shown ?? spec.choices).join(' | ')}: ` : '';
    return twoColumns(`  ${spec.flag} ${spec.metavar}`, `${choices}${spec.help}`);
  }).join('\n');
}

/** `head` padded to USAGE's second column, then `text` wrapped at its width under that column. */
function twoColumns(head: string, text: string): string {
  const lines: string[] = [];
  let line = head.padEnd(USAGE_COLUMN - 1);
  for (const word of text.split(' ')) {
    if (line.length + 1 + word.length > USAGE_WIDTH && line.trim() !== head.trim()) {
      lines.push(line);
      line = ' '.repeat(USAGE_COLUMN - 1);
    }
    line += ` ${word}`;
  }
  return [...lines, line].join('\n');
}

/**
 * Reads every --model flag from parsed flag values: each must come with --model (`model`), and
 * be one of its choices, a positive integer, or a plain parser name. `fail` builds the parser's error type.
 */
export function readModelFlags(values: Readonly<Record<string, unknown>>, model: string | undefined, fail: (message: string) => Error): ModelFlagValues {
  const read: Record<string, string | number> = {};
  for (const [name, spec] of MODEL_FLAG_SPECS) {
    const raw = values[spec.flag.slice(2)];
    if (raw === undefined) continue;
    if (model === undefined) throw fail(`${spec.flag} needs --model (a repository model sets the ${spec.parameter} parameter in its config.pbtxt)`);
    read[name] = modelFlagValue(spec, String(raw), fail);
  }
  return read as ModelFlagValues;
}

function modelFlagValue(spec: ModelFlagSpec, raw: string, fail: (message: string) => Error): string | number {
  switch (spec.kind) {
    case 'choice':
      if (!spec.choices.includes(raw)) throw fail(`${spec.flag} must be one of ${spec.choices.join(', ')}, got '${raw}'`);
      return raw;
    case 'count': {
      const n = Number(raw);
      if (raw.trim() === '' || !Number.isSafeInteger(n) || n < 1) throw fail(`${spec.flag} must be a positive integer, got '${raw}'`);
      return n;
    }
    case 'parser':
      if (!/^[a-z0-9_]+$/.test(raw)) throw fail(`${spec.flag} must be a parser name such as ${spec.example}, got '${raw}'`);
      return raw;
    case 'json': {
      let value: unknown;
      try {
        value = JSON.parse(raw);
      } catch (error) {
        throw fail(`${spec.flag} must be a JSON object such as '${spec.example}': ${(error as Error).message}`);
      }
      if (typeof value !== 'object' || value === null || Array.isArray(value)) throw fail(`${spec.flag} must be a JSON object such as '${spec.example}', got '${raw}'`);
      // Compact: one line of the config's string_value.
      return JSON.stringify(value);
    }
  }
}

/** The config.pbtxt parameter lines of the --model flags given, in the table's order. */
export function modelFlagParameters(values: ModelFlagValues): string {
  return MODEL_FLAG_SPECS.filter(([name]) => values[name] !== undefined)
    .map(([name, spec]) => `parameters: { key: "${spec.parameter}" value: { string_value: "${pbtxtEscaped(String(values[name]))}" } }\n`)
    .join('');
}

/** A text format string's body: backslashes and double quotes escaped (a JSON value's quotes). */
const pbtxtEscaped = (text: string): string => text.replace(/[\\"]/g, (c) => `\\${c}`);
