#!/usr/bin/env node
// `conveyor serve [options]` (npm start; `npx conveyor serve` after `npm run build`): builds the default repository's weights on first use,
// then serves the repository (or the one --model directory) until SIGINT/SIGTERM, which drain
// it (src/shutdown.ts); a second signal during the drain exits at once.
// `conveyor convert <hf-dir> <out-dir>`: a Hugging Face checkpoint → a servable ONNX directory (models/convert/).
// `conveyor pull ORG/NAME[@REVISION]`: fetch (and convert) a Hub model into the Hugging Face cache
// (src/hub/), as `serve --model ORG/NAME` does before it starts.

import { ensureDefaultRepository, DEFAULT_REPOSITORY } from '../models/default-repository.js';
import { CONVERT_USAGE, ConvertUsageError, parseConvertArguments } from '../models/convert/arguments.js';
import { CheckpointError, ConvertError, CONVERTER_VERSION, convertCheckpoint } from '../models/convert/convert.js';
import { HubError, hubSettings, MODEL_METADATA_FILES, parseHubId, servableModel, servingWants, type Converter, type HubModelId, type PullReport } from './hub/index.js';
import type { ServerOptions } from './config/server-options.js';
import { parseArgs } from 'node:util';
import { OptionsError, USAGE, parseServerOptions } from './config/server-options.js';
import { startServer, type RunningServer, type StartOptions } from './main.js';
import { resolve } from 'node:path';
import { pino, type LoggerOptions } from 'pino';
import { logSettingsForLevel, severityOfLevel, thresholdFor, type LogSettings } from './config/log-settings.js';
import { createRuntimeSettings } from './config/runtime-settings.js';

/** Log lines queued behind a stdout that does not drain, at most (bytes). */
const LOG_QUEUE_MAX_BYTES = 16 * 1024 * 1024;

/** How long a forced exit waits for a log write already under way (a stdout that does not drain must not hold it). */
const LOG_FINAL_WAIT_MS = 100;

/**
 * Writes what the log still holds, then calls `then` once: queued lines at once, synchronously;
 * a write already handed to the thread pool when it lands, or after LOG_FINAL_WAIT_MS.
 */
function flushLogThen(stdout: ReturnType<typeof pino.destination>, then: () => void): void {
  let called = false;
  const once = (): void => {
    if (called) return;
    called = true;
    clearTimeout(timer);
    then();
  };
  stdout.flushSync();
  const timer = setTimeout(once, LOG_FINAL_WAIT_MS);
  stdout.once('write', once);
}

async function serve(argv: string[]): Promise<void> {
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(USAGE);
    return;
  }
  let options = parseServerOptions(argv);
  // Structured JSON lines on stdout (pino, fastify's logger); --log-level filters them.
  // Written asynchronously, in order, each line as soon as the previous write is done: a
  // synchronous write to a pipe its reader is slow to drain (a log collector, a busy parent)
  // gets EAGAIN, and pino's writer then sleeps 100 ms on the serving thread and retries. What
  // is still queued at exit (a forced exit, a crash) is written synchronously by pino's exit
  // hook; past LOG_QUEUE_MAX_BYTES of backlog, lines are dropped rather than held.
  // Both loggers follow the run-time log settings (v2/logging), which start from --log-level.
  const settings = createRuntimeSettings(logSettingsForLevel(options.logLevel));
  const loggerOptions = followingLogSettings(settings.log);
  const stdout = pino.destination({ dest: 1, sync: false, maxLength: LOG_QUEUE_MAX_BYTES });
  const logger = pino(loggerOptions, stdout);
  settings.log.onChange((value) => (logger.level = thresholdFor(value)));
  const log = (line: string, fields?: Record<string, unknown>): void => logger.info(fields ?? {}, line);
  // Installed first, so a signal during startup drains the server once it is up (a second one exits at once).
  let started: Promise<RunningServer> | undefined;
  handleSignals(
    async () => (await started)?.stop(),
    log,
    (then) => flushLogThen(stdout, then),
  );
  // The bundled repository's weights are generated, never downloaded: build them if missing.
  const report: PullReport = { log: (line) => log(line), ...(process.stderr.isTTY ? { terminal: process.stderr } : {}) };
  if (options.hubModel !== undefined) options = await withHubModel(options, options.hubModel, report);
  if (options.model === undefined && resolve(options.modelRepository) === resolve(DEFAULT_REPOSITORY)) await ensureDefaultRepository(DEFAULT_REPOSITORY, log);
  started = startServer(options, { log, httpLogger: { ...loggerOptions, stream: stdout }, settings, hubModels: hubModelResolver(options.hfToken) });
  await started;
  // glibc reads it at process start, so the server can only say so (README: "Memory on Linux").
  if (process.platform === 'linux' && process.env['MALLOC_ARENA_MAX'] === undefined) {
    log('MALLOC_ARENA_MAX is not set: every model reload (precision swap, restart) then grows resident memory; start the server with MALLOC_ARENA_MAX=1');
  }
}

/** `conveyor convert` as the Hub seam calls it: a fetched checkpoint → a servable directory. */
const CONVERTER: Converter = {
  version: CONVERTER_VERSION,
  convert: async (checkpointDir, outDir, options) => {
    await convertCheckpoint(checkpointDir, outDir, options);
  },
};

function hubId(value: string, what: string): HubModelId {
  const id = parseHubId(value);
  if (!id) throw new OptionsError(`${what} '${value}' is neither a directory nor a Hub model ORG/NAME[@REVISION]`);
  return id;
}

/** serve --model ORG/NAME: the options serving the fetched (or converted) directory, named ORG/NAME unless --served-model-name says otherwise. */
async function withHubModel(options: ServerOptions, value: string, report: PullReport): Promise<ServerOptions> {
  const id = hubId(value, '--model');
  const served = await servableModel(id, servingWants(options.precision, options.attentionBackend), hubSettings(process.env, options.hfToken), CONVERTER, report);
  report.log(`${id.repo}: serving ${served.dir} (revision ${served.revision}, commit ${served.commit}, ${served.precision})`);
  return { ...options, model: served.dir, servedModelName: options.servedModelName ?? id.repo, modelSource: { repo: served.repo, revision: served.revision, commit: served.commit } };
}

/** What a repository config's hf_model parameter resolves through: the same cache and converter as --model ORG/NAME. */
function hubModelResolver(token: string | undefined): NonNullable<StartOptions['hubModels']> {
  return async (spec, wants, log) => {
    const id = parseHubId(spec);
    if (!id) throw new HubError('not-found', `parameter hf_model '${spec}' must name a Hub model as ORG/NAME[@REVISION]`);
    const served = await servableModel(id, servingWants(wants.precision, wants.attentionBackend), hubSettings(process.env, token), CONVERTER, { log });
    return { dir: served.dir, repo: served.repo, revision: served.revision, commit: served.commit, precision: served.precision };
  };
}

const PULL_USAGE = `conveyor pull ORG/NAME[@REVISION] [options]
  Fetches what serving the model needs into the Hugging Face cache ($HF_HUB_CACHE, else
  $HF_HOME/hub, else ~/.cache/huggingface/hub), shared with Python's huggingface_hub: an ONNX
  export's config, tokenizer and one variant; a safetensors checkpoint's weights, converted once
  into $HF_HOME/conveyor/converted/. HF_ENDPOINT, HF_TOKEN and HF_HUB_OFFLINE=1 are honoured.
  --precision P              the variant (as serve's --precision; default: the first the export has, fp32 for a checkpoint)
  --attention-backend NAME   paged or paged_onnx also fetch (or convert to) the paged graphs
  --hf-token TOKEN           the Hub token for gated or private models (default: HF_TOKEN)`;

async function pull(argv: string[]): Promise<void> {
  let parsed: ReturnType<typeof parsePull>;
  try {
    parsed = parsePull(argv);
  } catch (error) {
    throw new OptionsError(`${(error as Error).message}\n${PULL_USAGE}`);
  }
  const { values, positionals } = parsed;
  if (values.help) {
    console.log(PULL_USAGE);
    return;
  }
  if (positionals.length !== 1) throw new OptionsError(`expected one model ORG/NAME[@REVISION], got ${positionals.length}\n${PULL_USAGE}`);
  const id = hubId(positionals[0]!, 'pull');
  const log = (line: string): void => {
    process.stderr.write(`[pull] ${line}\n`);
  };
  const report: PullReport = { log, ...(process.stderr.isTTY ? { terminal: process.stderr } : {}) };
  const served = await servableModel(id, servingWants(values.precision, values['attention-backend']), hubSettings(process.env, values['hf-token']), CONVERTER, report);
  log(`${id.repo}@${served.revision}: commit ${served.commit}, ${served.precision}, in ${served.dir}`);
  console.log(served.dir);
}

function parsePull(argv: readonly string[]) {
  return parseArgs({
    args: [...argv],
    allowPositionals: true,
    options: { precision: { type: 'string' }, 'attention-backend': { type: 'string' }, 'hf-token': { type: 'string' }, help: { type: 'boolean', short: 'h' } },
  });
}

/** pino options under which a line is written only if the log settings allow its severity, with their timestamp format. */
function followingLogSettings(settings: LogSettings): LoggerOptions {
  return {
    level: thresholdFor(settings.value),
    base: { service: 'conveyor' },
    timestamp: () => (settings.value.log_format === 'ISO8601' ? `,"time":"${new Date().toISOString()}"` : `,"time":${Date.now()}`),
    hooks: {
      logMethod(args, method, level) {
        const { severity, verboseLevel } = severityOfLevel(level);
        if (settings.allows(severity, verboseLevel)) method.apply(this, args);
      },
    },
  };
}

/** Exit status of a second signal during the drain: death by that signal, 128 + its number (130 SIGINT, 143 SIGTERM). */
const FORCED_EXIT_CODES: Readonly<Record<'SIGINT' | 'SIGTERM', number>> = { SIGINT: 130, SIGTERM: 143 };

/**
 * The first SIGTERM or SIGINT starts the drain and exits 0 once it is done (1 if it failed). A
 * second one during the drain is an operator who will not wait: exit at once, with 130 / 143 so
 * a supervisor can tell a cut-short drain from a clean one.
 */
function handleSignals(stop: () => Promise<void>, log: (line: string, fields?: Record<string, unknown>) => void, flushLogThen: (then: () => void) => void): void {
  let draining = false;
  const onSignal = (signal: 'SIGINT' | 'SIGTERM'): void => {
    if (draining) {
      log(`${signal} again during the drain: exiting now, in-flight requests are cut`, { signal, exitCode: FORCED_EXIT_CODES[signal] });
      // Die by the signal itself (default action) rather than process.exit(): exit's native
      // teardown while an engine worker is mid-step can make onnxruntime abort (SIGABRT, 134).
      // Death by a signal runs no exit hooks: the log's last lines are written first.
      flushLogThen(() => {
        process.removeAllListeners(signal);
        process.kill(process.pid, signal);
      });
      return;
    }
    draining = true;
    log(`${signal}: shutting down (send it again to exit at once)`, { signal });
    stop().then(
      () => process.exit(0),
      (error: unknown) => {
        log(`shutdown failed: ${(error as Error).message}`);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => onSignal('SIGINT'));
  process.on('SIGTERM', () => onSignal('SIGTERM'));
}

async function convert(argv: string[]): Promise<void> {
  let args: ReturnType<typeof parseConvertArguments>;
  try {
    args = parseConvertArguments(argv);
  } catch (error) {
    throw error instanceof ConvertUsageError ? new OptionsError(error.message) : error;
  }
  if (!args) {
    console.log(CONVERT_USAGE);
    return;
  }
  const log = (line: string): void => {
    process.stderr.write(`[convert] ${line}\n`);
  };
  try {
    await convertCheckpoint(args.hfDir, args.outDir, { metadataFiles: MODEL_METADATA_FILES, precision: args.precision, paged: args.paged, log });
  } catch (error) {
    // A bad checkpoint is the user's input, not a crash: its message, no stack.
    if (!(error instanceof ConvertError || error instanceof CheckpointError)) throw error;
    process.stderr.write(`conveyor convert: ${error.message}\n`);
    process.exitCode = 1;
  }
}

async function main(): Promise<void> {
  const [command = 'serve', ...rest] = process.argv.slice(2);
  if (command === 'serve') return serve(rest);
  if (command === 'convert') return convert(rest);
  if (command === 'pull') return pull(rest);
  if (command.startsWith('--')) return serve([command, ...rest]);
  throw new OptionsError(`unknown command '${command}'\n${USAGE}`);
}

main().catch((error: unknown) => {
  // A Hub failure (unknown repository, no access, no such revision or file, the network) is the user's to fix: its message, exit 1.
  if (error instanceof HubError) {
    process.stderr.write(`conveyor: ${error.message}\n`);
    process.exit(1);
  }
  process.stderr.write(`${error instanceof OptionsError ? error.message : ((error as Error).stack ?? String(error))}\n`);
  process.exit(error instanceof OptionsError ? 2 : 1);
});
