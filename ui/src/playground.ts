// The chat playground: a conversation with any loaded LLM, streamed, with sampling controls, a
// JSON-schema toggle, the reasoning shown apart and a stop button that ends the generation.

import { chatRequest, streamChat, type ChatMessage, type SamplingControls, type StreamProgress } from './chat-stream.js';
import { formatNumber, h } from './dom.js';
import type { ModelRow } from './models.js';

const DEFAULT_SCHEMA = '{\n  "type": "object",\n  "properties": { "answer": { "type": "string" } },\n  "required": ["answer"]\n}';

export class Playground {
  private readonly model = h('select', { id: 'chat-model', 'aria-label': 'model' });
  private readonly log = h('div', { id: 'chat-log', class: 'chat-log' });
  private readonly input = h('textarea', { id: 'chat-input', rows: 3, placeholder: 'Say something…' });
  private readonly send = h('button', { id: 'chat-send', type: 'submit' }, 'Send');
  private readonly stop = h('button', { id: 'chat-stop', type: 'button', disabled: true }, 'Stop');
  private readonly fields = {
    system: h('textarea', { id: 'chat-system', rows: 2, placeholder: 'system prompt (optional)' }),
    temperature: h('input', { id: 'temperature', type: 'number', step: 0.1, min: 0, value: 0.7 }),
    top_p: h('input', { id: 'top_p', type: 'number', step: 0.05, min: 0, max: 1, value: 1 }),
    top_k: h('input', { id: 'top_k', type: 'number', step: 1, value: -1 }),
    max_tokens: h('input', { id: 'max_tokens', type: 'number', step: 1, min: 1, value: 256 }),
    seed: h('input', { id: 'seed', type: 'number', step: 1, placeholder: 'random' }),
    stop: h('input', { id: 'stop', type: 'text', placeholder: 'stop strings, separated by |' }),
    ignore_eos: h('input', { id: 'ignore_eos', type: 'checkbox' }),
    useSchema: h('input', { id: 'use-schema', type: 'checkbox' }),
    schema: h('textarea', { id: 'schema', rows: 5 }),
  };
  private readonly history: ChatMessage[] = [];
  private controller: AbortController | undefined;

  constructor(private readonly root: HTMLElement) {}

  start(): void {
    const f = this.fields;
    f.schema.value = DEFAULT_SCHEMA;
    const label = (text: string, control: HTMLElement) => h('label', {}, text, control);
    const form = h('form', { class: 'chat-form' }, this.input, h('div', { class: 'row' }, this.send, this.stop));
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      void this.ask();
    });
    this.stop.addEventListener('click', () => this.controller?.abort());
    const controls = h(
      'aside',
      { class: 'controls' },
      label('model', this.model),
      label('temperature', f.temperature),
      label('top_p', f.top_p),
      label('top_k', f.top_k),
      label('max_tokens', f.max_tokens),
      label('seed', f.seed),
      label('stop', f.stop),
      label('ignore EOS', f.ignore_eos),
      label('JSON schema output', f.useSchema),
      f.schema,
      f.system,
    );
    this.root.append(h('div', { class: 'playground' }, h('section', { class: 'chat' }, this.log, form), controls));
  }

  setModels(models: readonly ModelRow[]): void {
    const names = models.filter((m) => m.textGeneration && m.state === 'READY').map((m) => m.name);
    const current = this.model.value;
    if (names.join() === [...this.model.options].map((o) => o.value).join()) return;
    this.model.replaceChildren(...names.map((name) => h('option', { value: name, selected: name === current }, name)));
  }

  private controls(): SamplingControls {
    const f = this.fields;
    const number = (input: HTMLInputElement) => (input.value.trim() === '' ? undefined : Number(input.value));
    const topK = number(f.top_k);
    return {
      temperature: number(f.temperature),
      top_p: number(f.top_p),
      top_k: topK === -1 ? undefined : topK,
      max_tokens: number(f.max_tokens),
      seed: number(f.seed),
      stop: f.stop.value.split('|').filter((s) => s !== ''),
      ignore_eos: f.ignore_eos.checked || undefined,
      schema: f.useSchema.checked ? (JSON.parse(f.schema.value) as Record<string, unknown>) : undefined,
    };
  }

  private async ask(): Promise<void> {
    const text = this.input.value.trim();
    if (text === '' || this.controller) return;
    this.input.value = '';
    this.history.push({ role: 'user', content: text });
    this.log.append(h('div', { class: 'message user' }, text));
    const reasoning = h('details', { class: 'reasoning', hidden: true }, h('summary', {}, 'reasoning'));
    const content = h('div', { class: 'content' });
    const stats = h('div', { class: 'stats' }, 'waiting…');
    const message = h('div', { class: 'message assistant' }, reasoning, content, stats);
    this.log.append(message);
    this.controller = new AbortController();
    this.send.disabled = true;
    this.stop.disabled = false;
    let last: StreamProgress | undefined;
    const show = (progress: StreamProgress, ending?: string) => {
      last = progress;
      content.textContent = progress.content;
      if (progress.reasoning) {
        reasoning.hidden = false;
        reasoning.replaceChildren(h('summary', {}, 'reasoning'), progress.reasoning);
      }
      const tokens = progress.completionTokens ?? progress.deltas;
      stats.textContent = [
        `${tokens} tokens`,
        progress.promptTokens === null ? null : `prompt ${progress.promptTokens}`,
        `TTFT ${formatNumber(progress.ttftMs, 0)} ms`,
        `${formatNumber(progress.tokensPerSec)} tok/s`,
        ending ?? progress.finishReason ?? 'streaming…',
      ]
        .filter(Boolean)
        .join(' · ');
      this.log.scrollTop = this.log.scrollHeight;
    };
    try {
      const body = chatRequest(this.model.value, this.systemAnd(this.history), this.controls());
      const progress = await streamChat(body, this.controller.signal, (p) => show(p));
      show(progress);
      this.history.push({ role: 'assistant', content: progress.content });
      message.dataset['finish'] = progress.finishReason ?? '';
    } catch (error) {
      const stopped = this.controller.signal.aborted;
      if (last) show(last, stopped ? 'stopped' : 'failed');
      if (!stopped) message.append(h('div', { class: 'error' }, error instanceof Error ? error.message : String(error)));
      message.dataset['finish'] = stopped ? 'stopped' : 'error';
      if (stopped && !last) stats.textContent = 'stopped';
      this.history.pop();
    } finally {
      this.controller = undefined;
      this.send.disabled = false;
      this.stop.disabled = true;
    }
  }

  private systemAnd(history: readonly ChatMessage[]): ChatMessage[] {
    const system = this.fields.system.value.trim();
    return system ? [{ role: 'system', content: system }, ...history] : [...history];
  }
}
