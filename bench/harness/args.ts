// Command-line parsing for `npm run bench -- <scenario> [--flags]`: the flags every scenario
// understands plus the scenario's own, checked strictly so a typo fails instead of being ignored.

import { parseArgs } from 'node:util';
import type { FlagSpec, FlagValues, Scenario } from './scenario.js';

export interface CommonOptions {
  readonly reps: number;
  readonly warmup: number;
  readonly quick: boolean;
  readonly out: string | undefined;
  readonly baseline: string;
}

export type ParsedArgs =
  | { readonly kind: 'help'; readonly text: string; readonly error?: string }
  | { readonly kind: 'run'; readonly scenario: Scenario; readonly common: CommonOptions; readonly flags: FlagValues };

export const COMMON_FLAGS: Readonly<Record<string, FlagSpec>> = {
  reps: { type: 'string', usage: '--reps N', description: 'measured repetitions per case' },
  warmup: { type: 'string', usage: '--warmup N', description: 'unmeasured repetitions per case first' },
  quick: { type: 'boolean', usage: '--quick', description: 'smoke run: few repetitions, small shapes where the scenario has them' },
  out: { type: 'string', usage: '--out DIR', description: 'results folder (default bench/results/<YYYY-MM-DD>-<scenario>/)' },
  baseline: { type: 'string', usage: '--baseline VARIANT', description: 'variant the ratios are taken against' },
};

export function parseBenchArgs(argv: readonly string[], scenarios: readonly Scenario[]): ParsedArgs {
  const name = argv[0] !== undefined && !argv[0].startsWith('-') ? argv[0] : undefined;
  const scenario = scenarios.find((s) => s.name === name);
  if (name === undefined || argv.includes('--help') || argv.includes('-h')) {
    return { kind: 'help', text: helpText(scenarios, scenario) };
  }
  if (!scenario) return { kind: 'help', text: helpText(scenarios), error: `unknown scenario '${name}'` };

  const specs = { ...COMMON_FLAGS, ...scenario.flags };
  const options = Object.fromEntries(Object.entries(specs).map(([flag, spec]) => [flag, { type: spec.type }]));
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({ args: argv.slice(1), options, strict: true, allowPositionals: false }) as { values: Record<string, string | boolean | undefined> });
  } catch (error) {
    return { kind: 'help', text: helpText(scenarios, scenario), error: (error as Error).message };
  }
  const quick = values['quick'] === true;
  const defaults = quick ? scenario.defaults.quick : scenario.defaults.full;
  const common: CommonOptions = {
    reps: positiveInt(values['reps'], defaults.reps, '--reps', 1),
    warmup: positiveInt(values['warmup'], defaults.warmup, '--warmup', 0),
    quick,
    out: typeof values['out'] === 'string' ? values['out'] : undefined,
    baseline: typeof values['baseline'] === 'string' ? values['baseline'] : scenario.defaults.baseline,
  };
  const flags = Object.fromEntries(Object.keys(scenario.flags).map((flag) => [flag, values[flag]]));
  return { kind: 'run', scenario, common, flags };
}

export function positiveInt(value: string | boolean | undefined, fallback: number, flag: string, min: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (typeof value !== 'string' || !Number.isInteger(n) || n < min) throw new Error(`${flag} needs an integer ≥ ${min}, got '${String(value)}'`);
  return n;
}

/** Comma-separated list of integers ≥ 1, e.g. '--batches 1,8,32'. */
export function intList(value: string | boolean | undefined, fallback: readonly number[], flag: string): number[] {
  if (value === undefined) return [...fallback];
  return String(value)
    .split(',')
    .map((part) => positiveInt(part.trim(), 0, flag, 1));
}

export function stringList<T extends string>(value: string | boolean | undefined, allowed: readonly T[], fallback: readonly T[], flag: string): T[] {
  if (value === undefined) return [...fallback];
  return String(value)
    .split(',')
    .map((part) => {
      const item = part.trim() as T;
      if (!allowed.includes(item)) throw new Error(`${flag}: '${item}' is not one of ${allowed.join(', ')}`);
      return item;
    });
}

export function helpText(scenarios: readonly Scenario[], only?: Scenario): string {
  const flagLines = (flags: Readonly<Record<string, FlagSpec>>): string[] => Object.values(flags).map((f) => `    ${f.usage.padEnd(26)} ${f.description}`);
  const lines = ['Usage: npm run bench -- <scenario> [--flags]', '', 'Scenarios:'];
  for (const s of only ? [only] : scenarios) {
    lines.push(`  ${s.name.padEnd(12)} ${s.description}`);
    if (Object.keys(s.flags).length > 0) lines.push(...flagLines(s.flags));
    lines.push(
      `    (defaults: --reps ${s.defaults.full.reps} --warmup ${s.defaults.full.warmup}; with --quick: --reps ${s.defaults.quick.reps} --warmup ${s.defaults.quick.warmup}; baseline ${s.defaults.baseline})`,
    );
  }
  lines.push('', 'Flags for every scenario:', ...flagLines(COMMON_FLAGS), '    --help, -h                 this text');
  return lines.join('\n');
}
