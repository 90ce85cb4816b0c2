// An llm config naming a Hub model loads from a directory whose version 1 links to what the
// resolver fetched, with the source in its parameters; no resolver, or the resolver's failure,
// is the load's reason, made by the caller's refuse.
import { mkdtemp, readlink, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { modelConfigFromJson } from '../../../src/repository/config/index.js';
import { HF_MODEL_PARAMETER, hubModelDir, hubModelSpec } from '../../../src/serving/hub-model-dir.js';
import type { HubModelResolver } from '../../../src/serving/served-model.js';

const root = await mkdtemp(join(tmpdir(), 'hub-model-dir-'));
const made: string[] = [];
afterAll(async () => {
  for (const dir of [root, ...made]) await rm(dir, { recursive: true, force: true });
});

const llm = (parameters: Record<string, string>) =>
  modelConfigFromJson(JSON.stringify({ name: 'm', backend: 'llm', parameters: Object.fromEntries(Object.entries(parameters).map(([k, v]) => [k, { string_value: v }])) }), 'm');
const refuse = (reason: string): Error => new Error(`refused: ${reason}`);

describe('hubModelDir', () => {
  it('names the Hub model of an llm config only', () => {
    expect(hubModelSpec(llm({ [HF_MODEL_PARAMETER]: 'org/model' }))).toBe('org/model');
    expect(hubModelSpec(llm({}))).toBeUndefined();
  });

  it('links version 1 to the resolved directory and adds the source to the parameters', async () => {
    const wanted: unknown[] = [];
    const resolver: HubModelResolver = async (spec, wants) => {
      wanted.push([spec, wants]);
      return { dir: root, repo: 'org/model', revision: 'main', commit: 'abc123', precision: 'q4' };
    };
    const { config, modelDir } = await hubModelDir(root, 'm', llm({ [HF_MODEL_PARAMETER]: 'org/model', attention_backend: 'paged' }), 'org/model', resolver, () => {}, refuse);
    made.push(modelDir);
    expect(wanted).toEqual([['org/model', { attentionBackend: 'paged' }]]);
    expect(await readlink(join(modelDir, '1'))).toBe(root);
    expect(config.parameters['hf_repo']?.string_value).toBe('org/model');
    expect(config.parameters['hf_commit']?.string_value).toBe('abc123');
    expect(config.parameters['precision']?.string_value).toBe('q4');
  });

  it('refuses without a resolver, and with the resolver’s reason when it fails', async () => {
    const config = llm({ [HF_MODEL_PARAMETER]: 'org/model' });
    await expect(hubModelDir(root, 'm', config, 'org/model', undefined, () => {}, refuse)).rejects.toThrow(
      "refused: parameter hf_model 'org/model' names a Hub model, and this server was started without the Hub (start it with conveyor serve)",
    );
    const failing: HubModelResolver = () => Promise.reject(new Error('org/model: no such repository'));
    await expect(hubModelDir(root, 'm', config, 'org/model', failing, () => {}, refuse)).rejects.toThrow('refused: org/model: no such repository');
  });
});
