// The embeddings tab (cosine similarity between texts, /v1/embeddings) and the classification
// tab (an image file → top-5 labels through the KServe infer route with Triton's
// classification extension).

import { postJson } from './api.js';
import { h } from './dom.js';
import type { ModelRow } from './models.js';
import { cosineSimilarity, parseClassification, rgbaToChw } from './vectors.js';

const fillSelect = (select: HTMLSelectElement, names: readonly string[]) => {
  if (names.join() === [...select.options].map((o) => o.value).join()) return;
  select.replaceChildren(...names.map((name) => h('option', { value: name }, name)));
};

export class EmbeddingsTab {
  private readonly model = h('select', { id: 'embed-model', 'aria-label': 'embedding model' });
  private readonly texts = h('textarea', { id: 'embed-texts', rows: 6, placeholder: 'one text per line' });
  private readonly result = h('div', { id: 'embed-result' });

  constructor(private readonly root: HTMLElement) {}

  start(): void {
    this.texts.value = 'a cat sat on the mat\na kitten rests on a rug\nquarterly revenue grew';
    const run = h('button', { id: 'embed-run', type: 'button' }, 'Compare');
    run.addEventListener('click', () => void this.compare());
    this.root.append(h('div', { class: 'tool' }, h('label', {}, 'model', this.model), this.texts, run, this.result));
  }

  setModels(models: readonly ModelRow[]): void {
    fillSelect(
      this.model,
      models.filter((m) => m.embeddings && m.state === 'READY').map((m) => m.name),
    );
  }

  private async compare(): Promise<void> {
    const inputs = this.texts.value.split('\n').filter((line) => line.trim() !== '');
    this.result.replaceChildren('embedding…');
    try {
      const answer = await postJson<{ data: { index: number; embedding: number[] }[] }>('/v1/embeddings', { model: this.model.value, input: inputs });
      const vectors = [...answer.data].sort((a, b) => a.index - b.index).map((d) => d.embedding);
      const header = h('tr', {}, h('th', {}, ''), ...inputs.map((_, j) => h('th', {}, `#${j + 1}`)));
      const rows = inputs.map((text, i) =>
        h('tr', {}, h('th', { title: text }, `#${i + 1} ${text.slice(0, 40)}`), ...vectors.map((v) => h('td', { class: 'sim' }, cosineSimilarity(vectors[i]!, v).toFixed(3)))),
      );
      this.result.replaceChildren(h('p', { class: 'muted' }, `${vectors[0]?.length ?? 0} dimensions`), h('table', { class: 'similarity' }, h('thead', {}, header), h('tbody', {}, ...rows)));
    } catch (error) {
      this.result.replaceChildren(h('div', { class: 'error' }, String(error)));
    }
  }
}

export class ClassifyTab {
  private readonly model = h('select', { id: 'classify-model', 'aria-label': 'image model' });
  private readonly file = h('input', { id: 'classify-file', type: 'file', accept: 'image/*' });
  private readonly preview = h('canvas', { id: 'classify-preview', width: 224, height: 224 });
  private readonly result = h('ol', { id: 'classify-result' });
  private models: readonly ModelRow[] = [];

  constructor(private readonly root: HTMLElement) {}

  start(): void {
    this.file.addEventListener('change', () => void this.classify());
    this.root.append(h('div', { class: 'tool' }, h('label', {}, 'model', this.model), this.file, h('div', { class: 'row' }, this.preview, this.result)));
  }

  setModels(models: readonly ModelRow[]): void {
    this.models = models.filter((m) => m.image !== undefined);
    fillSelect(
      this.model,
      this.models.map((m) => m.name),
    );
  }

  private async classify(): Promise<void> {
    const picked = this.file.files?.[0];
    const model = this.models.find((m) => m.name === this.model.value);
    if (picked === undefined || model?.image === undefined) return;
    const { input, output, height, width } = model.image;
    this.result.replaceChildren(h('li', {}, 'classifying…'));
    try {
      const bitmap = await createImageBitmap(picked);
      this.preview.width = width;
      this.preview.height = height;
      const context = this.preview.getContext('2d');
      if (context === null) throw new Error('no 2d canvas');
      context.drawImage(bitmap, 0, 0, width, height);
      const pixels = rgbaToChw(context.getImageData(0, 0, width, height).data, width, height);
      const body = { inputs: [{ name: input, shape: [1, 3, height, width], datatype: 'FP32', data: Array.from(pixels) }], outputs: [{ name: output, parameters: { classification: 5 } }] };
      const answer = await postJson<{ outputs: { data: string[] }[] }>(`/v2/models/${encodeURIComponent(model.name)}/infer`, body);
      const labels = parseClassification(answer.outputs[0]?.data ?? []);
      this.result.replaceChildren(...labels.map((l) => h('li', { class: 'label' }, h('strong', {}, l.label), ` ${l.score.toFixed(3)}`)));
    } catch (error) {
      this.result.replaceChildren(h('li', { class: 'error' }, String(error)));
    }
  }
}
