// The dashboard tab: the model list (with the admin actions) and live charts polled from
// GET /ui/api/status every second.

import { callJson } from './api.js';
import { LineChart } from './chart.js';
import { h } from './dom.js';
import { dashboardPoint, type Status } from './metrics-view.js';
import { listModels, loadModel, swapPrecision, unloadModel, type ModelRow } from './models.js';

const POLL_MS = 1000;
const MODELS_EVERY_POLLS = 5;
const PRECISIONS = ['fp32', 'fp16', 'int8', 'q4'];

const CHARTS = [
  { id: 'tokens', title: 'Output tokens/s', unit: 'tok/s' },
  { id: 'requests', title: 'LLM requests', unit: 'req' },
  { id: 'cache', title: 'KV cache usage · prefix-cache hit rate', unit: '%' },
  { id: 'ttft', title: 'Time to first token', unit: 'ms' },
  { id: 'itl', title: 'Inter-token latency', unit: 'ms' },
  { id: 'batch', title: 'Dynamic batcher: batch size', unit: 'items' },
  { id: 'queue', title: 'Dynamic batcher: queue time', unit: 'ms' },
  { id: 'lag', title: 'Event-loop lag p99', unit: 'ms' },
  { id: 'spec', title: 'Speculative decoding: tokens per verify step', unit: 'tok' },
] as const;

type ChartId = (typeof CHARTS)[number]['id'];

export class Dashboard {
  private readonly charts = new Map<ChartId, LineChart>();
  private readonly modelBody = h('tbody', { id: 'model-rows' });
  private readonly errorBody = h('tbody', { id: 'error-rows' });
  private readonly progress = new Map<string, string>();
  private previous: Status | undefined;
  private polls = 0;
  private models: ModelRow[] = [];

  constructor(
    private readonly root: HTMLElement,
    private readonly onModels: (models: readonly ModelRow[]) => void,
  ) {}

  start(): void {
    const grid = h('div', { class: 'charts' });
    for (const chart of CHARTS) {
      const canvas = h('canvas', { id: `chart-${chart.id}`, width: 420, height: 150 });
      grid.append(h('figure', {}, h('figcaption', {}, chart.title), canvas));
      this.charts.set(chart.id, new LineChart(canvas, chart.unit));
    }
    const modelHead = h('tr', {}, ...['model', 'version', 'backend', 'state', 'precision', 'file', 'admin'].map((c) => h('th', {}, c)));
    const errorHead = h('tr', {}, ...['time', 'request', 'status', 'message'].map((c) => h('th', {}, c)));
    this.root.append(
      h('h2', {}, 'Models'),
      h('table', { class: 'models' }, h('thead', {}, modelHead), this.modelBody),
      h('h2', {}, 'Live'),
      grid,
      h('h2', {}, 'Recent errors'),
      h('table', { class: 'errors' }, h('thead', {}, errorHead), this.errorBody),
    );
    void this.refreshModels();
    void this.poll();
  }

  async refreshModels(): Promise<void> {
    try {
      this.models = await listModels();
      this.renderModels();
      this.onModels(this.models);
    } catch (error) {
      this.modelBody.replaceChildren(h('tr', {}, h('td', { colspan: 7, class: 'error' }, String(error))));
    }
  }

  private async poll(): Promise<void> {
    try {
      const status = await callJson<Status>('/ui/api/status');
      if (this.previous) this.plot(dashboardPoint(this.previous, status));
      this.previous = status;
      this.renderErrors(status);
      if (++this.polls % MODELS_EVERY_POLLS === 0) await this.refreshModels();
    } catch {
      // The key prompt (401) or a restart: try again on the next tick.
    }
    setTimeout(() => void this.poll(), POLL_MS);
  }

  private plot(point: ReturnType<typeof dashboardPoint>): void {
    const push = (id: ChartId, values: Record<string, number | null>) => this.charts.get(id)?.push(values);
    push('tokens', { 'tokens/s': point.outputTokensPerSec });
    push('requests', { running: point.running, waiting: point.waiting });
    push('cache', { 'KV usage': point.kvUsagePercent, 'prefix hits': point.prefixHitPercent });
    push('ttft', { p50: point.ttftMs.p50, p95: point.ttftMs.p95 });
    push('itl', { p50: point.interTokenMs.p50, p95: point.interTokenMs.p95 });
    push('batch', point.batchSize);
    push('queue', point.queueMs);
    push('lag', { p99: point.eventLoopLagP99Ms });
    push('spec', { proposed: point.speculation.proposedPerDraft, accepted: point.speculation.acceptedPerDraft });
  }

  private renderModels(): void {
    this.modelBody.replaceChildren(
      ...this.models.map((model) => {
        const note = this.progress.get(model.name);
        const state = h('td', { class: `state state-${model.state.toLowerCase()}` }, model.state, model.reason ? h('div', { class: 'reason' }, model.reason) : null);
        return h(
          'tr',
          { 'data-model': model.name },
          h('td', {}, model.name),
          h('td', {}, model.version),
          h('td', {}, model.backend),
          state,
          h('td', { class: 'precision' }, model.precision),
          h('td', { class: 'file' }, model.modelFile),
          h('td', {}, this.adminCell(model), note ? h('div', { class: 'progress' }, note) : null),
        );
      }),
    );
  }

  private adminCell(model: ModelRow): HTMLElement {
    const select = h('select', { 'aria-label': `precision of ${model.name}` }, ...PRECISIONS.map((p) => h('option', { value: p, selected: p === model.precision }, p)));
    const button = (label: string, action: () => Promise<unknown>) => {
      const element = h('button', { type: 'button', class: 'small' }, label);
      element.addEventListener('click', () => void this.act(model.name, label, action));
      return element;
    };
    return h(
      'span',
      { class: 'admin' },
      button('load', () => loadModel(model.name)),
      button('unload', () => unloadModel(model.name)),
      select,
      button('swap', () => swapPrecision(model.name, select.value)),
    );
  }

  private async act(model: string, label: string, action: () => Promise<unknown>): Promise<void> {
    this.progress.set(model, `${label}…`);
    this.renderModels();
    try {
      await action();
      this.progress.set(model, `${label}: done`);
    } catch (error) {
      this.progress.set(model, `${label} failed: ${error instanceof Error ? error.message : String(error)}`);
    }
    await this.refreshModels();
  }

  private renderErrors(status: Status): void {
    const rows = status.errors
      .slice(0, 15)
      .map((e) => h('tr', {}, h('td', {}, new Date(e.time_ms).toLocaleTimeString()), h('td', {}, `${e.method} ${e.path}`), h('td', {}, String(e.status)), h('td', {}, e.message)));
    this.errorBody.replaceChildren(...(rows.length > 0 ? rows : [h('tr', {}, h('td', { colspan: 4, class: 'muted' }, 'none'))]));
  }
}
