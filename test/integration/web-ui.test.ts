// The built-in web UI in a real browser (headless Chromium through playwright-core) against the
// real server: the dashboard lists the default models and its charts move under load; a
// playground chat streams, and its stop button frees the engine (read back from /metrics);
// embeddings and classification round trips; the admin actions; the API-key prompt; and no
// console errors anywhere. CONVEYOR_SCREENSHOTS=1 (npm run screenshots) also writes the
// README's screenshots to docs/images/.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumExecutable, NO_CHROMIUM_REASON } from '../support/browser.js';
import { configOf, makeRepository, startTestServer, type TestServer } from '../support/server.js';

const executable = chromiumExecutable();
if (executable === undefined) console.warn(`web UI browser tests skipped: ${NO_CHROMIUM_REASON}`);

const API = 'sk-ui-api';
const ADMIN = 'sk-ui-admin';
const SCREENSHOTS = process.env['CONVEYOR_SCREENSHOTS'] === '1';
const IMAGES = join(import.meta.dirname, '..', '..', 'docs', 'images');
const DEFAULT_MODELS = ['bert-tiny', 'qwen3-tiny', 'resnet-tiny'];
const SPECULATIVE_CONFIG = JSON.stringify({ method: 'ngram', num_speculative_tokens: 3, prompt_lookup_min: 1, prompt_lookup_max: 3 });
const SHARED_PREFIX = 'Every request of this load starts with the same words, block after block. '.repeat(12);

let browser: Browser;
let open: TestServer;
let keyed: TestServer;
/** Every console error and uncaught page error, per page, with the page's purpose. */
const consoleErrors: { page: string; text: string }[] = [];

async function newPage(server: TestServer, purpose: string, path = '/'): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
  page.on('console', (message) => {
    if (message.type() === 'error') consoleErrors.push({ page: purpose, text: message.text() });
  });
  page.on('pageerror', (error) => consoleErrors.push({ page: purpose, text: String(error) }));
  await page.goto(`${server.http}${path}`);
  return page;
}

/** The sum of a gauge's series in the server's own /metrics. */
async function gauge(server: TestServer, name: string): Promise<number> {
  const text = await (await fetch(`${server.http}/metrics`)).text();
  return text
    .split('\n')
    .filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
}

const chartMax = async (page: Page, id: string) => Number((await page.getAttribute(`#chart-${id}`, 'data-max')) ?? '0');

/** Requests that drive every chart: LLM chats, embeddings (BERT) and images (ResNet) in bursts the batcher can group. */
async function loadRound(server: TestServer): Promise<void> {
  const post = (path: string, body: unknown) => fetch(`${server.http}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }).then((r) => r.text());
  const image = { inputs: [{ name: 'input', shape: [1, 3, 224, 224], datatype: 'FP32', data: new Array<number>(3 * 224 * 224).fill(0.5) }] };
  await Promise.all([
    // One long shared prefix, so the prefix cache has something to find.
    ...Array.from({ length: 4 }, (_, i) =>
      post('/v1/chat/completions', { model: 'qwen3-tiny', messages: [{ role: 'user', content: `${SHARED_PREFIX} load ${i}` }], max_tokens: 24, ignore_eos: true }),
    ),
    // Greedy, so it proposes: speculation checks greedy rows only.
    post('/v1/completions', { model: 'qwen3-tiny', prompt: SHARED_PREFIX, max_tokens: 24, ignore_eos: true, temperature: 0 }),
    ...Array.from({ length: 8 }, (_, i) => post('/v1/embeddings', { model: 'bert-tiny', input: `text number ${i}` })),
    ...Array.from({ length: 6 }, () => post('/v2/models/resnet-tiny/infer', image)),
  ]);
}

describe.skipIf(executable === undefined)('the web UI in Chromium', () => {
  beforeAll(async () => {
    // The LLM speculates (n-gram, from one matching token) so the speculative-decoding chart has proposals to plot.
    const speculating = (text: string) => `${text}parameters: { key: "speculative_config" value: { string_value: ${JSON.stringify(SPECULATIVE_CONFIG)} } }\n`;
    const repository = await makeRepository(DEFAULT_MODELS.map((name) => ({ name, from: name, config: configOf(name, name, name === 'qwen3-tiny' ? speculating : undefined) })));
    const common = ['--model-control-mode', 'explicit', '--load-model', '*'];
    open = await startTestServer(repository, common);
    // r1 thinks from its first token (deepseek_r1's block opens in the prompt): the playground shows that apart.
    const r1 = configOf('qwen3-tiny', 'r1', (text) => `${text}parameters: { key: "reasoning_parser" value: { string_value: "deepseek_r1" } }\n`);
    const keyedRepository = await makeRepository([
      { name: 'bert-tiny', from: 'bert-tiny', config: configOf('bert-tiny', 'bert-tiny') },
      { name: 'r1', from: 'qwen3-tiny', config: r1 },
    ]);
    keyed = await startTestServer(keyedRepository, [...common, '--api-key', API, '--admin-key', ADMIN]);
    browser = await chromium.launch({ executablePath: executable!, args: ['--no-sandbox'] });
  }, 300_000);
  afterAll(async () => {
    await browser?.close();
    await Promise.all([open?.stop(), keyed?.stop()]);
  });

  it('lists the default models with backend, version, state and precision, and its charts move under load', async () => {
    const page = await newPage(open, 'dashboard');
    for (const name of DEFAULT_MODELS) {
      const row = page.locator(`tr[data-model="${name}"]`);
      await expect
        .poll(() => row.locator('td').allTextContents(), { timeout: 30_000 })
        .toEqual([name, '1', expect.stringMatching(/^(onnxruntime_onnx|llm)$/), 'READY', 'fp32', expect.any(String), expect.any(String)]);
    }
    expect(await page.locator('tr[data-model="qwen3-tiny"] td').nth(2).textContent()).toBe('llm');
    // Load until every chart that load moves has drawn a non-zero point (each poll is a point).
    const moved = async () => (await Promise.all(['tokens', 'requests', 'cache', 'ttft', 'itl', 'batch', 'queue', 'spec'].map((id) => chartMax(page, id)))).every((max) => max > 0);
    while (!(await moved())) await loadRound(open);
    expect(await chartMax(page, 'lag')).toBeGreaterThan(0);
    // A refused request shows among the recent errors.
    await fetch(`${open.http}/v1/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model":"bert-tiny"}' });
    await expect.poll(() => page.locator('#error-rows tr').first().textContent(), { timeout: 30_000 }).toMatch(/POST \/v1\/embeddings400.*input/);
    if (SCREENSHOTS) {
      // A picture worth looking at: a minute of history under load first.
      while (Number(await page.getAttribute('#chart-tokens', 'data-points')) < 60) await loadRound(open);
      mkdirSync(IMAGES, { recursive: true });
      await page.screenshot({ path: join(IMAGES, 'dashboard.png'), fullPage: true });
    }
    await page.close();
  }, 300_000);

  it('streams a playground chat with its stats, and the stop button frees the engine', async () => {
    const page = await newPage(open, 'playground', '/ui/#playground');
    await expect.poll(() => page.locator('#chat-model option').allTextContents(), { timeout: 30_000 }).toEqual(['qwen3-tiny']);
    // A short answer runs to its length limit: token count, TTFT and tokens/s shown.
    await page.fill('#max_tokens', '12');
    await page.check('#ignore_eos');
    await page.fill('#seed', '7');
    await page.fill('#chat-input', 'Tell me a story.');
    await page.click('#chat-send');
    const first = page.locator('.message.assistant').first();
    await expect.poll(() => first.getAttribute('data-finish'), { timeout: 60_000 }).toBe('length');
    expect(await first.locator('.stats').textContent()).toMatch(/^12 tokens · prompt \d+ · TTFT \d+ ms · [\d.]+ tok\/s · length$/);
    expect((await first.locator('.content').textContent())?.length).toBeGreaterThan(0);
    // A long one is stopped while it streams; the server aborts it and its engine runs nothing.
    await page.fill('#max_tokens', '3500');
    await page.fill('#chat-input', 'And another, a long one.');
    await page.click('#chat-send');
    const second = page.locator('.message.assistant').nth(1);
    await expect.poll(async () => (await second.locator('.content').textContent())?.length ?? 0, { timeout: 60_000 }).toBeGreaterThan(0);
    expect(await gauge(open, 'conveyor:num_requests_running')).toBe(1);
    if (SCREENSHOTS) await page.screenshot({ path: join(IMAGES, 'playground.png') });
    await page.click('#chat-stop');
    await expect.poll(() => second.getAttribute('data-finish'), { timeout: 30_000 }).toBe('stopped');
    await expect.poll(() => gauge(open, 'conveyor:num_requests_running'), { timeout: 30_000 }).toBe(0);
    expect(await second.locator('.stats').textContent()).toMatch(/ · stopped$/);
    expect(await page.isDisabled('#chat-stop')).toBe(true);
    // The JSON-schema toggle constrains the answer to the schema.
    await page.uncheck('#ignore_eos');
    await page.fill('#max_tokens', '200');
    await page.check('#use-schema');
    await page.fill('#schema', JSON.stringify({ type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'], additionalProperties: false }));
    await page.fill('#chat-input', 'Answer in JSON.');
    await page.click('#chat-send');
    const third = page.locator('.message.assistant').nth(2);
    await expect.poll(() => third.getAttribute('data-finish'), { timeout: 60_000 }).toBe('stop');
    expect(typeof (JSON.parse((await third.locator('.content').textContent()) ?? '') as { ok: unknown }).ok).toBe('boolean');
    await page.close();
  }, 300_000);

  it('compares texts by embedding', async () => {
    const page = await newPage(open, 'embeddings', '/ui/#embeddings');
    await expect.poll(() => page.locator('#embed-model option').allTextContents(), { timeout: 30_000 }).toEqual(['bert-tiny']);
    await page.click('#embed-run');
    const cells = page.locator('#embed-result td.sim');
    await expect.poll(() => cells.count(), { timeout: 30_000 }).toBe(9);
    const values = (await cells.allTextContents()).map(Number);
    // The diagonal is each text with itself, and the matrix is symmetric.
    expect([values[0], values[4], values[8]]).toEqual([1, 1, 1]);
    expect(values[1]).toBe(values[3]);
    expect(await page.textContent('#embed-result')).toContain('32 dimensions');
    await page.close();
  }, 120_000);

  it('classifies an image file through the KServe infer route', async () => {
    const page = await newPage(open, 'classify', '/ui/#classify');
    await expect.poll(() => page.locator('#classify-model option').allTextContents(), { timeout: 30_000 }).toEqual(['resnet-tiny']);
    // Any PNG will do: the page's own pixels.
    const png = await page.screenshot({ clip: { x: 0, y: 0, width: 64, height: 64 } });
    await page.setInputFiles('#classify-file', { name: 'picture.png', mimeType: 'image/png', buffer: png });
    const labels = page.locator('#classify-result li.label');
    await expect.poll(() => labels.count(), { timeout: 30_000 }).toBe(5);
    const scores = (await labels.allTextContents()).map((text) => Number(text.slice(text.lastIndexOf(' ') + 1)));
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);
    expect(await labels.first().locator('strong').textContent()).toMatch(/^\w+ \w+$/);
    await page.close();
  }, 120_000);

  it('asks for the key once, shows nothing without it, and runs admin actions only with the admin key', async () => {
    const page = await newPage(keyed, 'api key');
    await page.waitForSelector('#key-dialog:not([hidden])');
    expect(await page.isHidden('#app')).toBe(true);
    expect(await page.locator('tr[data-model]').count()).toBe(0);
    // An API key: the models show, and an unload is refused with the server's reason.
    await page.fill('#key-input', API);
    await page.click('#key-submit');
    const row = page.locator('tr[data-model="bert-tiny"]');
    await expect.poll(() => row.locator('td').nth(3).textContent(), { timeout: 30_000 }).toBe('READY');
    expect(await page.evaluate("sessionStorage.getItem('conveyor.apiKey')")).toBe(API);
    await row.locator('button', { hasText: 'unload' }).click();
    await expect.poll(() => row.locator('.progress').textContent(), { timeout: 30_000 }).toMatch(/^unload failed: 403: this route needs an admin key/);
    // A reload keeps the key (session storage): no prompt.
    await page.reload();
    await expect.poll(() => page.locator('tr[data-model="bert-tiny"]').count(), { timeout: 30_000 }).toBe(1);
    expect(await page.isHidden('#key-dialog')).toBe(true);
    // The admin key swaps the precision: the new variant serves.
    await page.click('#forget-key');
    await page.waitForSelector('#key-dialog:not([hidden])');
    await page.fill('#key-input', ADMIN);
    await page.click('#key-submit');
    const adminRow = page.locator('tr[data-model="bert-tiny"]');
    await adminRow.locator('select').selectOption('fp16');
    await adminRow.locator('button', { hasText: 'swap' }).click();
    await expect.poll(() => adminRow.locator('.progress').textContent(), { timeout: 120_000 }).toBe('swap: done');
    await expect.poll(() => adminRow.locator('td.precision').textContent(), { timeout: 30_000 }).toBe('fp16');
    expect(await adminRow.locator('td.file').textContent()).toBe('model_fp16.onnx');
    await page.close();
  }, 300_000);

  it("shows a reasoning model's thinking apart from its answer", async () => {
    const page = await newPage(keyed, 'reasoning', '/ui/#playground');
    await page.fill('#key-input', API);
    await page.click('#key-submit');
    await expect.poll(() => page.locator('#chat-model option').allTextContents(), { timeout: 30_000 }).toEqual(['r1']);
    await page.fill('#max_tokens', '12');
    await page.check('#ignore_eos');
    await page.fill('#chat-input', 'Think first.');
    await page.click('#chat-send');
    const answer = page.locator('.message.assistant').first();
    await expect.poll(() => answer.getAttribute('data-finish'), { timeout: 60_000 }).toBe('length');
    expect(await answer.locator('details.reasoning').isVisible()).toBe(true);
    const thinking = (await answer.locator('details.reasoning').textContent()) ?? '';
    expect(thinking.replace(/^reasoning/, '').length).toBeGreaterThan(0);
    expect(await answer.locator('.content').textContent()).not.toContain(thinking.replace(/^reasoning/, ''));
    await page.close();
  }, 120_000);

  it('logged no console errors (the key prompt aside: its first call is refused with 401 by design)', () => {
    const unexpected = consoleErrors.filter((e) => !(['api key', 'reasoning'].includes(e.page) && /status of 40[13]/.test(e.text)));
    expect(unexpected).toEqual([]);
  });
});
