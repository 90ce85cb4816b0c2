// A Hub model as a directory the llm backend serves: an ONNX export is its cache snapshot as it
// is; a safetensors checkpoint is converted (the converter is given by the caller: models/ sits
// above src/) into $HF_HOME/conveyor/converted/ORG--NAME/<commit>/v<converter>-<precision>[-paged],
// written under a temporary name and renamed when whole, so a cut conversion is never reused and
// a whole one is reused by every later start.

import { existsSync } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { HubError } from './errors.js';
import { formatHubId, type HubModelId } from './hub-id.js';
import { pullModel, type HubSettings, type PullReport } from './pull.js';
import { MODEL_METADATA_FILES, type ConvertPrecision, type ServingWants } from './select.js';

/** `conveyor convert` as a function: checkpoint directory → servable directory. */
export interface Converter {
  /** Part of the converted directory's name: a converter that writes other graphs gets another directory. */
  readonly version: string;
  /** `metadataFiles`: the checkpoint's files to copy beside the converted graphs (MODEL_METADATA_FILES). */
  convert(checkpointDir: string, outDir: string, options: { metadataFiles: readonly string[]; precision: ConvertPrecision; paged: boolean; log: (line: string) => void }): Promise<void>;
}

export interface ServableModel {
  /** The directory to serve (config.json, tokenizer files, onnx/). */
  readonly dir: string;
  readonly repo: string;
  readonly revision: string;
  readonly commit: string;
  /** The variant served (canonical precision name). */
  readonly precision: string;
  /** Where the files came from: an ONNX export, or a checkpoint converted now or before. */
  readonly source: 'onnx' | 'converted' | 'converted-before';
}

/** The directory serving `id` with `wants`, fetched (and converted) as needed. */
export async function servableModel(id: HubModelId, wants: ServingWants, settings: HubSettings, converter: Converter, report: PullReport): Promise<ServableModel> {
  const pulled = await pullModel(id, wants, settings, report);
  const base = { repo: id.repo, revision: id.revision, commit: pulled.commit, precision: pulled.selection.precision };
  if (pulled.selection.kind === 'onnx') return { ...base, dir: pulled.snapshotDir, source: 'onnx' };
  const paged = wants.attentionBackend !== undefined && wants.attentionBackend !== 'past_key_values';
  const dirOf = (withPaged: boolean) => convertedDir(settings.home, id.repo, pulled.commit, converter.version, pulled.selection.precision, withPaged);
  // A paged conversion also holds the Optimum graph: either serves a start that does not page.
  for (const candidate of paged ? [dirOf(true)] : [dirOf(false), dirOf(true)]) {
    if (existsSync(candidate)) {
      report.log(`${id.repo}: using the checkpoint converted before (${candidate})`);
      return { ...base, dir: candidate, source: 'converted-before' };
    }
  }
  const dir = dirOf(paged);
  const staging = `${dir}.partial-${process.pid}-${Date.now()}`;
  report.log(`${id.repo}: converting the safetensors checkpoint (${pulled.commit.slice(0, 12)}) to ${pulled.selection.precision}${paged ? ' with paged graphs' : ''} into ${dir}`);
  await mkdir(dirname(dir), { recursive: true });
  try {
    await converter.convert(pulled.snapshotDir, staging, {
      metadataFiles: MODEL_METADATA_FILES,
      precision: pulled.selection.precision,
      paged,
      log: (line) => report.log(`${id.repo}: convert: ${line}`),
    });
    await rename(staging, dir).catch(async (error: NodeJS.ErrnoException) => {
      // Another start converted it meanwhile: theirs is as good.
      if (!existsSync(dir)) throw error;
    });
  } catch (error) {
    throw new HubError('convert', `${formatHubId(id)}: converting the checkpoint failed: ${(error as Error).message}`);
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
  return { ...base, dir, source: 'converted' };
}

export function convertedDir(home: string, repo: string, commit: string, version: string, precision: string, paged: boolean): string {
  return join(home, 'conveyor', 'converted', repo.replace('/', '--'), commit, `v${version}-${precision}${paged ? '-paged' : ''}`);
}
