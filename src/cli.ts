// `conveyor serve [options]` (npm start): builds the default repository's weights on first use,
// then serves the repository (or the one --model directory) until SIGINT/SIGTERM.

import { ensureDefaultRepository, DEFAULT_REPOSITORY } from '../models/default-repository.js';
import { OptionsError, USAGE, parseServerOptions } from './config/server-options.js';
import { startServer } from './server/create-server.js';
import { resolve } from 'node:path';
import { pino } from 'pino';

async function serve(argv: string[]): Promise<void> {
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(USAGE);
    return;
  }
  const options = parseServerOptions(argv);
  // Structured JSON lines on stdout (pino, fastify's logger); --log-level filters them.
  const logger = pino({ level: options.logLevel, base: { service: 'conveyor' } });
  const log = (line: string, fields?: Record<string, unknown>): void => logger.info(fields ?? {}, line);
  // The bundled repository's weights are generated, never downloaded: build them if missing.
  if (options.model === undefined && resolve(options.modelRepository) === resolve(DEFAULT_REPOSITORY)) await ensureDefaultRepository(DEFAULT_REPOSITORY, log);
  const server = await startServer(options, { log, httpLogger: { level: options.logLevel, base: { service: 'conveyor' } } });
  const shutdown = (signal: string): void => {
    log(`${signal}: shutting down`, { signal });
    void server.stop().then(() => process.exit(0));
  };
  process.once('SIGINT', () => shutdown('SIGINT'));
  process.once('SIGTERM', () => shutdown('SIGTERM'));
}

async function main(): Promise<void> {
  const [command = 'serve', ...rest] = process.argv.slice(2);
  if (command === 'serve') return serve(rest);
  if (command.startsWith('--')) return serve([command, ...rest]);
  throw new OptionsError(`unknown command '${command}'\n${USAGE}`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof OptionsError ? error.message : (error as Error).stack ?? String(error)}\n`);
  process.exit(error instanceof OptionsError ? 2 : 1);
});
