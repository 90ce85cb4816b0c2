// The drain on shutdown (SIGTERM, the first SIGINT, or stop() in tests), in one place:
//   1. readiness goes false and new inference requests are refused as retryable, while the
//      HTTP and gRPC listeners stay open so an orchestrator sees "not ready", not "refused";
//   2. in-flight requests and streams get until the exit timeout to finish; the drain ends as
//      soon as they have, without waiting out the rest of the timeout;
//   3. at the exit timeout, generations still running are ended with a final error event in
//      their protocol's shape (their KV blocks are freed), given a short while to write it;
//   4. only then do the front ends close, and the metrics port last.

import { cutByShutdown, type ConveyorError } from './errors.js';

/** How long step 3 waits for the final error events, and step 4 for the front ends, before moving on. */
export const FINAL_EVENTS_GRACE_MS = 5000;

export interface DrainParts {
  /** Turns readiness false and starts refusing new requests. */
  beginShutdown(): void;
  /** Unloads every model; resolves once their in-flight requests finished. */
  unloadAll(): Promise<void>;
  /** Ends the generations still running with `reason`; returns how many there were. */
  abortInFlight(reason: ConveyorError): number;
  /** Closes the HTTP and gRPC listeners and their connections (step 4), itself bounded in time. */
  closeFrontEnds(): Promise<void>;
  /** Closes the metrics port. */
  closeMetrics(): Promise<void>;
  readonly log: (line: string, fields?: Record<string, unknown>) => void;
}

export interface DrainOutcome {
  /** True when every in-flight request finished within the exit timeout. */
  readonly finishedInTime: boolean;
  /** Generations ended by the exit timeout. */
  readonly aborted: number;
}

/** Resolves true when `work` settles within `ms`, false otherwise; never rejects. */
export async function settlesWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([
      work.then(
        () => true,
        () => true,
      ),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

export async function drain(parts: DrainParts, exitTimeoutMs: number): Promise<DrainOutcome> {
  const { log } = parts;
  parts.beginShutdown();
  log('draining: readiness is false and new requests get 503 / UNAVAILABLE; in-flight requests have until the exit timeout', { exitTimeoutSecs: exitTimeoutMs / 1000 });
  const unloaded = parts.unloadAll();
  const finishedInTime = await settlesWithin(unloaded, exitTimeoutMs);
  let aborted = 0;
  if (finishedInTime) {
    log('drain: every in-flight request finished');
  } else {
    aborted = parts.abortInFlight(cutByShutdown());
    log(`drain: exit timeout reached; ${aborted} generation(s) still running end with an error event`, { aborted });
    if (!(await settlesWithin(unloaded, FINAL_EVENTS_GRACE_MS))) log('drain: models did not unload in time; closing anyway');
  }
  await parts.closeFrontEnds();
  // Last, so a scrape during the drain still sees the final counts.
  await parts.closeMetrics();
  log('drain: stopped', { finishedInTime, aborted });
  return { finishedInTime, aborted };
}
