// The server's models as the UI lists them: the repository index (every model, any state) joined
// with the OpenAI cards (precision, file, capabilities) and KServe metadata (backend).

import { callJson, postJson } from './api.js';

interface IndexRow {
  readonly name: string;
  readonly version?: string;
  readonly state?: string;
  readonly reason?: string;
  readonly precision?: string;
}

interface OpenAiCard {
  readonly id: string;
  readonly precision?: string;
  readonly model_file?: string;
  readonly state?: string;
  readonly capabilities?: { readonly text_generation?: boolean; readonly embeddings?: boolean };
}

interface Metadata {
  readonly platform?: string;
  readonly inputs?: readonly { readonly name: string; readonly datatype: string; readonly shape: readonly number[] }[];
  readonly outputs?: readonly { readonly name: string }[];
  readonly parameters?: Readonly<Record<string, unknown>>;
}

export interface ModelRow {
  readonly name: string;
  readonly version: string;
  readonly state: string;
  readonly reason: string;
  readonly backend: string;
  readonly precision: string;
  readonly modelFile: string;
  readonly textGeneration: boolean;
  readonly embeddings: boolean;
  /** A single [N, 3, H, W] FP32 input: an image classifier the classification tab can drive. */
  readonly image?: { readonly input: string; readonly output: string; readonly height: number; readonly width: number };
}

function imageInput(metadata: Metadata): ModelRow['image'] {
  const [input] = metadata.inputs ?? [];
  const [output] = metadata.outputs ?? [];
  if (metadata.inputs?.length !== 1 || input === undefined || output === undefined || input.datatype !== 'FP32') return undefined;
  const [, channels, height, width] = input.shape;
  if (input.shape.length !== 4 || channels !== 3 || height === undefined || width === undefined || height <= 0 || width <= 0) return undefined;
  return { input: input.name, output: output.name, height, width };
}

export async function listModels(): Promise<ModelRow[]> {
  const [index, cards] = await Promise.all([postJson<IndexRow[]>('/v2/repository/index', {}), callJson<{ data: OpenAiCard[] }>('/v1/models')]);
  const byId = new Map(cards.data.map((card) => [card.id, card]));
  return Promise.all(
    index.map(async (row): Promise<ModelRow> => {
      const card = byId.get(row.name);
      const ready = row.state === 'READY';
      const metadata = ready ? await callJson<Metadata>(`/v2/models/${encodeURIComponent(row.name)}`).catch((): Metadata => ({})) : {};
      const parameters = metadata.parameters ?? {};
      return {
        name: row.name,
        version: row.version ?? '—',
        state: row.state ?? card?.state ?? 'UNKNOWN',
        reason: row.reason ?? '',
        backend: metadata.platform ?? '—',
        precision: card?.precision ?? row.precision ?? String(parameters['precision'] ?? '—'),
        modelFile: card?.model_file ?? String(parameters['model_file'] ?? '—'),
        textGeneration: card?.capabilities?.text_generation ?? false,
        embeddings: card?.capabilities?.embeddings ?? false,
        image: ready ? imageInput(metadata) : undefined,
      };
    }),
  );
}

/** Reload `model` with its config's precision replaced: the new variant loads beside the old one. */
export async function swapPrecision(model: string, precision: string): Promise<void> {
  const path = `/v2/models/${encodeURIComponent(model)}/config`;
  const config = await callJson<Record<string, unknown> & { parameters?: Record<string, unknown> }>(path);
  const edited = { ...config, parameters: { ...(config.parameters ?? {}), precision: { string_value: precision } } };
  await postJson(`/v2/repository/models/${encodeURIComponent(model)}/load`, { parameters: { config: JSON.stringify(edited) } });
}

export const loadModel = (model: string): Promise<unknown> => postJson(`/v2/repository/models/${encodeURIComponent(model)}/load`, {});
export const unloadModel = (model: string): Promise<unknown> => postJson(`/v2/repository/models/${encodeURIComponent(model)}/unload`, {});
