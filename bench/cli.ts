// `npm run bench -- <scenario> [--flags]`. Progress and logs go to stderr; stdout gets only the
// summary, whose results table comes last.

import { parseBenchArgs } from './harness/args.js';
import { runScenario } from './harness/run-scenario.js';
import { messageOf } from './harness/runner.js';
import { SCENARIOS } from './scenarios/index.js';

async function main(argv: readonly string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseBenchArgs(argv, SCENARIOS);
  } catch (error) {
    process.stderr.write(`bench: ${messageOf(error)}\n`);
    return 2;
  }
  if (parsed.kind === 'help') {
    if (parsed.error) {
      process.stderr.write(`bench: ${parsed.error}\n\n${parsed.text}\n`);
      return 2;
    }
    process.stdout.write(`${parsed.text}\n`);
    return argv.length === 0 ? 2 : 0;
  }
  const result = await runScenario(parsed.scenario, { common: parsed.common, flags: parsed.flags });
  process.stderr.write(`wrote ${result.files.join(', ')} to ${result.dir}\n`);
  process.stdout.write(`\n${result.summary}`);
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`bench: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  },
);
