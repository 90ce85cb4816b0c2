// The page's entry: ask for a key when the server wants one, then start the tabs. Nothing is
// fetched (and so nothing shown) until the status route answers with the key in hand.

import { callJson, forgetKey, HttpError, storedKey, storeKey, whenUnauthorized } from './api.js';
import { Dashboard } from './dashboard.js';
import { byId } from './dom.js';
import type { ModelRow } from './models.js';
import { Playground } from './playground.js';
import { ClassifyTab, EmbeddingsTab } from './tools.js';

const TABS = ['dashboard', 'playground', 'embeddings', 'classify'] as const;

function showTab(tab: string): void {
  for (const name of TABS) {
    byId(`tab-${name}`).hidden = name !== tab;
    byId(`nav-${name}`).classList.toggle('active', name === tab);
  }
}

function askForKey(reason: string): void {
  byId('app').hidden = true;
  byId('key-reason').textContent = reason;
  byId('key-dialog').hidden = false;
  byId<HTMLInputElement>('key-input').focus();
}

let started = false;

function startTabs(): void {
  if (started) return;
  started = true;
  byId('key-dialog').hidden = true;
  byId('app').hidden = false;
  const playground = new Playground(byId('tab-playground'));
  const embeddings = new EmbeddingsTab(byId('tab-embeddings'));
  const classify = new ClassifyTab(byId('tab-classify'));
  const onModels = (models: readonly ModelRow[]) => {
    playground.setModels(models);
    embeddings.setModels(models);
    classify.setModels(models);
  };
  playground.start();
  embeddings.start();
  classify.start();
  new Dashboard(byId('tab-dashboard'), onModels).start();
  for (const name of TABS) byId(`nav-${name}`).addEventListener('click', () => showTab(name));
  showTab(location.hash.slice(1) || 'dashboard');
}

async function connect(): Promise<void> {
  try {
    await callJson('/ui/api/status');
    startTabs();
  } catch (error) {
    if (error instanceof HttpError && error.status === 401) {
      askForKey(storedKey() ? 'The server refused that key.' : 'This server needs an API key.');
    } else {
      byId('key-reason').textContent = `The server did not answer: ${String(error)}`;
      byId('key-dialog').hidden = false;
    }
  }
}

byId<HTMLFormElement>('key-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const key = byId<HTMLInputElement>('key-input').value.trim();
  if (key === '') return;
  storeKey(key);
  byId<HTMLInputElement>('key-input').value = '';
  void connect();
});
byId('forget-key').addEventListener('click', () => {
  forgetKey();
  location.reload();
});
whenUnauthorized(() => {
  if (!started) return;
  byId('key-banner').hidden = false;
});

void connect();
