// An llm config naming a Hub model (its `hf_model` parameter): the model manager loads it from a
// model directory whose version 1 links to the directory the resolver fetched (and converted),
// with the source added to the config's parameters (hf_repo, hf_revision, hf_commit; the
// /v1/models card shows them).

import { createHash } from 'node:crypto';
import { mkdir, readlink, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ModelConfig } from '../contracts/model-config.js';
import type { HubModelResolver } from './served-model.js';

/** The llm parameter naming a Hub model (ORG/NAME[@REVISION]) that version 1 of the model serves. */
export const HF_MODEL_PARAMETER = 'hf_model';

/** The Hub model an llm config names, if it names one. */
export const hubModelSpec = (config: ModelConfig): string | undefined => (config.backend === 'llm' ? config.parameters[HF_MODEL_PARAMETER]?.string_value : undefined);

/**
 * The config and model directory that load model `name` of the repository at `root` from the Hub
 * model `spec`, fetched now. No resolver, or the resolver's own failure, is the load's reason:
 * thrown as `refuse` makes it.
 */
export async function hubModelDir(
  root: string,
  name: string,
  config: ModelConfig,
  spec: string,
  resolver: HubModelResolver | undefined,
  log: (line: string) => void,
  refuse: (reason: string) => Error,
): Promise<{ config: ModelConfig; modelDir: string }> {
  if (!resolver) throw refuse(`parameter ${HF_MODEL_PARAMETER} '${spec}' names a Hub model, and this server was started without the Hub (start it with conveyor serve)`);
  const parameter = (key: string): string | undefined => config.parameters[key]?.string_value;
  const wants = { ...(parameter('precision') ? { precision: parameter('precision') } : {}), ...(parameter('attention_backend') ? { attentionBackend: parameter('attention_backend') } : {}) };
  const resolved = await resolver(spec, wants, log).catch((error: Error) => {
    throw refuse(error.message);
  });
  // One directory per repository and model, so a reload reuses (and relinks) it.
  const tag = createHash('sha256').update(`${root}\0${name}`).digest('hex').slice(0, 12);
  const modelDir = join(tmpdir(), `conveyor-hub-${tag}`);
  await mkdir(modelDir, { recursive: true });
  const link = join(modelDir, '1');
  if ((await readlink(link).catch(() => null)) !== resolved.dir) {
    await rm(link, { force: true, recursive: true });
    await symlink(resolved.dir, link, 'dir');
  }
  const source = { hf_repo: resolved.repo, hf_revision: resolved.revision, hf_commit: resolved.commit, precision: parameter('precision') ?? resolved.precision };
  const parameters = { ...config.parameters, ...Object.fromEntries(Object.entries(source).map(([key, value]) => [key, { string_value: value }])) };
  return { config: { ...config, parameters }, modelDir };
}
