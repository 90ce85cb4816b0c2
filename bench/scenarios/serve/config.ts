// The serve scenario's flags and what they resolve to. Names follow vLLM's `bench serve` where it
// has the same thing (--num-prompts, --request-rate, --burstiness, --max-concurrency, --goodput,
// the random dataset's lengths and range ratio); --max-concurrency takes a list, and each value
// is one point of the sweep every system runs.

import type { ModelSize } from '../../../models/common/model-files.js';
import { intList, positiveInt, stringList } from '../../harness/args.js';
import type { FlagSpec, FlagValues } from '../../harness/scenario.js';
import type { DatasetKind } from './dataset.js';
import type { GoodputSlo } from './metrics.js';
import { SYSTEMS, type SystemName } from './systems.js';

export const SERVE_FLAGS: Readonly<Record<string, FlagSpec>> = {
  'base-url': { type: 'string', usage: '--base-url URL', description: 'benchmark this OpenAI-compatible server instead of starting the three systems' },
  model: { type: 'string', usage: '--model NAME', description: 'model name in the requests (default: the served name; with --base-url the first of /v1/models)' },
  size: { type: 'string', usage: '--size tiny|bench', description: 'decoder the systems serve and the prompts are tokenized with (default bench; --quick: tiny)' },
  'model-dir': { type: 'string', usage: '--model-dir DIR', description: 'serve this Hugging Face decoder directory instead of the built one' },
  tokenizer: { type: 'string', usage: '--tokenizer DIR|none', description: 'tokenizer for exact prompt lengths (default the model directory; none: random words)' },
  systems: { type: 'string', usage: '--systems a,b', description: `systems to run (default ${SYSTEMS.join(',')})` },
  dataset: { type: 'string', usage: '--dataset random|shared-prefix', description: 'prompt set (default random)' },
  'num-prompts': {
    type: 'string',
    usage: '--num-prompts N[,N…]',
    description: 'requests per point and system, one for all or one per point (default 2 × concurrency, at least 8; --quick: at least 2)',
  },
  'request-rate': { type: 'string', usage: '--request-rate R|inf', description: 'requests per second, gamma arrivals (default inf: all at once)' },
  burstiness: { type: 'string', usage: '--burstiness B', description: 'gamma shape of the arrivals; 1 = Poisson (default 1)' },
  'max-concurrency': { type: 'string', usage: '--max-concurrency 1,8,32', description: 'requests in flight at most, one point each; inf = no cap (default 1,8,32; --quick: 1,4)' },
  'input-len': { type: 'string', usage: '--input-len L', description: 'prompt tokens after any prefix (default 128; --quick: 16)' },
  'output-len': { type: 'string', usage: '--output-len L', description: 'max_tokens, with ignore_eos (default 64; --quick: 8)' },
  'range-ratio': { type: 'string', usage: '--range-ratio r', description: 'lengths uniform in [L·(1−r), L·(1+r)] (default 0)' },
  'prefix-len': { type: 'string', usage: '--prefix-len P', description: 'shared prefix tokens (default 0; shared-prefix: 256, --quick: 32)' },
  'num-prefixes': { type: 'string', usage: '--num-prefixes K', description: 'shared-prefix: distinct prefixes, taken in turn (default 1)' },
  goodput: { type: 'string', usage: '--goodput ttft:ms,tpot:ms,e2el:ms', description: 'SLOs for goodput (any of the three, comma or space separated)' },
  seed: { type: 'string', usage: '--seed N', description: 'dataset and arrival seed (default 0)' },
};

export interface ServeConfig {
  readonly baseUrl: string | undefined;
  readonly model: string | undefined;
  readonly apiKey: string | undefined;
  readonly size: ModelSize;
  readonly modelDir: string | undefined;
  /** Directory, 'none', or undefined for the model directory. */
  readonly tokenizer: string | undefined;
  readonly systems: readonly SystemName[];
  readonly dataset: DatasetKind;
  /** One count for every point, or one per point; undefined: 2 × concurrency. */
  readonly numPrompts: readonly number[] | undefined;
  readonly requestRate: number;
  readonly burstiness: number;
  readonly concurrency: readonly number[];
  readonly inputLen: number;
  readonly outputLen: number;
  readonly rangeRatio: number;
  readonly prefixLen: number;
  readonly numPrefixes: number;
  readonly slo: GoodputSlo | undefined;
  readonly seed: number;
  readonly quick: boolean;
}

export function serveConfig(flags: FlagValues, quick: boolean): ServeConfig {
  const config = readConfig(flags, quick);
  const counts = config.numPrompts?.length ?? 1;
  if (counts !== 1 && counts !== config.concurrency.length) throw new Error(`--num-prompts has ${counts} counts for ${config.concurrency.length} concurrency points`);
  return config;
}

function readConfig(flags: FlagValues, quick: boolean): ServeConfig {
  const size = stringList<ModelSize>(flags['size'], ['tiny', 'bench'], [quick ? 'tiny' : 'bench'], '--size');
  if (size.length !== 1) throw new Error('--size takes one size');
  const dataset = stringList<DatasetKind>(flags['dataset'], ['random', 'shared-prefix'], ['random'], '--dataset');
  if (dataset.length !== 1) throw new Error('--dataset takes one dataset');
  const str = (key: string): string | undefined => (typeof flags[key] === 'string' ? (flags[key] as string) : undefined);
  return {
    baseUrl: str('base-url')?.replace(/\/+$/, ''),
    model: str('model'),
    apiKey: process.env['OPENAI_API_KEY'],
    size: size[0]!,
    modelDir: str('model-dir'),
    tokenizer: str('tokenizer'),
    systems: stringList(flags['systems'], SYSTEMS, SYSTEMS, '--systems'),
    dataset: dataset[0]!,
    numPrompts: flags['num-prompts'] === undefined ? undefined : intList(flags['num-prompts'], [], '--num-prompts'),
    requestRate: rate(str('request-rate')),
    burstiness: positiveNumber(str('burstiness'), 1, '--burstiness'),
    concurrency: concurrencyList(str('max-concurrency'), quick ? [1, 4] : [1, 8, 32]),
    inputLen: positiveInt(flags['input-len'], quick ? 16 : 128, '--input-len', 1),
    outputLen: positiveInt(flags['output-len'], quick ? 8 : 64, '--output-len', 1),
    rangeRatio: fraction(str('range-ratio')),
    prefixLen: positiveInt(flags['prefix-len'], dataset[0] === 'shared-prefix' ? (quick ? 32 : 256) : 0, '--prefix-len', 0),
    numPrefixes: positiveInt(flags['num-prefixes'], 1, '--num-prefixes', 1),
    slo: goodput(str('goodput')),
    seed: positiveInt(flags['seed'], 0, '--seed', 0),
    quick,
  };
}

/** Requests at point `index`: the flag, else enough for the cap to be reached twice over. */
export function promptsAt(config: Pick<ServeConfig, 'numPrompts' | 'quick'>, concurrency: number, index: number): number {
  if (config.numPrompts !== undefined) return config.numPrompts[config.numPrompts.length === 1 ? 0 : index]!;
  const floor = config.quick ? 2 : 8;
  return Math.max(floor, concurrency === Infinity ? floor : 2 * concurrency);
}

function rate(value: string | undefined): number {
  if (value === undefined || value === 'inf') return Infinity;
  return positiveNumber(value, Infinity, '--request-rate');
}

function positiveNumber(value: string | undefined, fallback: number, flag: string): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${flag} needs a number > 0, got '${value}'`);
  return n;
}

function fraction(value: string | undefined): number {
  if (value === undefined) return 0;
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0 || n >= 1) throw new Error(`--range-ratio needs a number in [0, 1), got '${value}'`);
  return n;
}

export function concurrencyList(value: string | undefined, fallback: readonly number[]): number[] {
  if (value === undefined) return [...fallback];
  return value.split(',').map((part) => {
    const text = part.trim();
    return text === 'inf' ? Infinity : positiveInt(text, 0, '--max-concurrency', 1);
  });
}

/** `ttft:500,tpot:50` or `ttft:500 tpot:50 e2el:3000` (ms), as vLLM's --goodput. */
export function goodput(value: string | undefined): GoodputSlo | undefined {
  if (value === undefined) return undefined;
  const slo: Record<string, number> = {};
  for (const item of value.split(/[\s,]+/).filter((s) => s !== '')) {
    const [name, ms] = item.split(':');
    const key = { ttft: 'ttftMs', tpot: 'tpotMs', e2el: 'e2elMs' }[name ?? ''];
    const n = Number(ms);
    if (!key || !Number.isFinite(n) || n <= 0) throw new Error(`--goodput: '${item}' is not ttft:ms, tpot:ms or e2el:ms`);
    slo[key] = n;
  }
  return slo as GoodputSlo;
}
