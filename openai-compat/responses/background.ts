// Background responses (background: true): the create call answers at once with the queued
// response, and the generation runs detached from the client's connection. The stored entry is
// rewritten as the run moves on (in_progress with the first engine event, then completed,
// incomplete or failed), so GET polls it; cancel aborts the generation (its KV blocks freed
// within a step) and answers with the cancelled response.

import type { GenerationEvent } from '../../src/contracts/text-generation.js';
import type { WireObject } from './output-events.js';
import type { ResponseStatus } from './response-object.js';
import type { ResponseStore } from './stored.js';

export interface BackgroundRun {
  status: ResponseStatus;
  onEvent(event: GenerationEvent): unknown;
}

export interface BackgroundPlan {
  readonly id: string;
  readonly events: AsyncIterable<{ readonly event: GenerationEvent }>;
  readonly run: BackgroundRun;
  /** The response as the run now stands. */
  readonly snapshot: () => WireObject;
  readonly keep: (response: WireObject) => void;
  /** Aborts the generation; the signal the events were started with. */
  readonly controller: AbortController;
}

export function runInBackground(store: ResponseStore, plan: BackgroundPlan): void {
  const { run, snapshot, keep, controller } = plan;
  const settled = (async () => {
    try {
      for await (const { event } of plan.events) {
        if (run.status === 'queued') {
          run.status = 'in_progress';
          keep(snapshot());
        }
        run.onEvent(event);
      }
      keep(snapshot());
    } catch (error) {
      if (controller.signal.aborted) {
        run.status = 'cancelled';
        keep(snapshot());
        return;
      }
      run.status = 'failed';
      keep({ ...snapshot(), error: { code: 'server_error', message: error instanceof Error ? error.message : String(error) } });
    } finally {
      store.untrack(plan.id);
    }
  })();
  store.track(plan.id, async () => {
    controller.abort();
    await settled;
    return store.retrieve(plan.id);
  });
}
