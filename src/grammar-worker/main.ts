// The grammar worker thread (see entry.ts): jobs run one at a time, in arrival order, so a
// release never overtakes the masks of the step that still reads the request, and a compile
// queued behind a step's masks waits for them rather than the other way round. A job that fails
// for any reason but a refused spec leaves xgrammar's state unknown: the worker reports it and
// exits, and the engine fails its constrained rows and starts a fresh worker on the next one.

import { parentPort, workerData } from 'node:worker_threads';
import { asConveyorError } from '../errors.js';
import { GrammarEngine } from '../grammar/grammar-engine.js';
import type { ConstraintMatcher } from '../grammar/matcher.js';
import { CompileProbe, compileBoundRefusal } from './compile-probe.js';
import type { FromGrammarWorker, GrammarWorkerData, MaskJob, MaskResult, ToGrammarWorker, TryJob, TryResult } from './entry.js';

const port = parentPort!;
const { tokenizerPath, vocabSize, compileTimeoutSecs } = workerData as GrammarWorkerData;
const boundMs = (compileTimeoutSecs ?? 0) * 1000;
const probe = boundMs > 0 ? new CompileProbe({ tokenizerPath, vocabSize }, boundMs) : undefined;
// The bound holds over the translation on this thread and the compile on the probe (0: neither).
const bound = probe
  ? { trialCompile: (text: string, feature: string) => probe.check(text, feature), translationBound: { ms: boundMs, refusal: (feature: string) => compileBoundRefusal(feature, boundMs) } }
  : {};
const engine = GrammarEngine.open({ tokenizerPath, logitsVocabSize: vocabSize, ...bound });
const matchers = new Map<string, ConstraintMatcher>();
const post = (message: FromGrammarWorker, transfer: ArrayBuffer[] = []): void => port.postMessage(message, transfer);

async function open(requestId: string, message: Extract<ToGrammarWorker, { type: 'open' }>): Promise<void> {
  const grammars = await engine;
  const constraint = await grammars.compile(message.spec);
  matchers.get(requestId)?.dispose();
  matchers.set(requestId, await grammars.matcher(constraint, message.stopTokenIds));
}

/** Rolls back and accepts the job's tokens; true when the grammar refused one (the matcher stops before it). */
function catchUp(matcher: ConstraintMatcher, job: MaskJob): boolean {
  matcher.rollBack(job.rollBack);
  for (const token of job.accept) if (!matcher.accept(token)) return true;
  return false;
}

async function mask(job: MaskJob): Promise<MaskResult> {
  const matcher = matchers.get(job.requestId);
  if (!matcher) return { requestId: job.requestId, mask: null, accepted: 0, refused: false };
  const refused = catchUp(matcher, job);
  const result = { requestId: job.requestId, mask: await matcher.nextTokenMask(), accepted: matcher.numAccepted, refused };
  return job.drafts && !refused ? { ...result, draftMasks: await draftMasks(matcher, job.drafts) } : result;
}

/** The masks after each proposal the grammar takes (MaskJob.drafts), the matcher left where it was. */
async function draftMasks(matcher: ConstraintMatcher, drafts: readonly number[]): Promise<Int32Array[]> {
  const masks: Int32Array[] = [];
  let taken = 0;
  for (const token of drafts) {
    if (matcher.isTerminated() || !matcher.accept(token)) break;
    taken++;
    // A stop token that ends the grammar leaves no next position to mask.
    if (matcher.isTerminated()) break;
    masks.push(await matcher.nextTokenMask());
  }
  matcher.rollBack(taken);
  return masks;
}

async function tryCandidates(job: TryJob): Promise<TryResult> {
  const { requestId } = job;
  const started = performance.now();
  const matcher = matchers.get(requestId);
  const result = (token: number | null, mask: Int32Array | null, refused: boolean): TryResult => ({
    requestId,
    token,
    mask,
    accepted: matcher?.numAccepted ?? 0,
    refused,
    known: matcher !== undefined,
    ms: performance.now() - started,
  });
  if (!matcher) return result(null, null, false);
  if (catchUp(matcher, job)) return result(null, null, true);
  // A refused candidate leaves the matcher as it was, so the next one is tried from the same state.
  for (const token of job.candidates) if (matcher.accept(token)) return result(token, null, false);
  return result(null, await matcher.nextTokenMask(), false);
}

const buffersOf = (results: readonly { readonly mask: Int32Array | null; readonly draftMasks?: readonly Int32Array[] }[]): ArrayBuffer[] =>
  results.flatMap((r) => [...(r.mask ? [r.mask] : []), ...(r.draftMasks ?? [])].map((mask) => mask.buffer as ArrayBuffer));

async function run(message: ToGrammarWorker): Promise<void> {
  if (message.type === 'release') {
    matchers.get(message.requestId)?.dispose();
    matchers.delete(message.requestId);
    return;
  }
  try {
    if (message.type === 'open') {
      await open(message.requestId, message);
      post({ type: 'opened', id: message.id });
      return;
    }
    const started = performance.now();
    if (message.type === 'try') {
      const results: TryResult[] = [];
      for (const job of message.rows) results.push(await tryCandidates(job));
      post({ type: 'tried', id: message.id, results, ms: performance.now() - started }, buffersOf(results));
      return;
    }
    const masks: MaskResult[] = [];
    for (const job of message.rows) masks.push(await mask(job));
    post({ type: 'masks', id: message.id, masks, ms: performance.now() - started }, buffersOf(masks));
  } catch (error) {
    const e = asConveyorError(error);
    post({ type: 'failed', id: message.id, code: e.code, message: e.message });
    if (e.code !== 'INVALID_ARG') process.exit(1);
  }
}

let queue = Promise.resolve();
const enqueue = (message: ToGrammarWorker): void => {
  queue = queue.then(() => run(message));
};
/** Opens whose spec is being vetted (checked and trial-compiled) beside the queue, by request. */
const vetting = new Map<string, Promise<unknown>>();

port.on('message', (message: ToGrammarWorker) => {
  if (message.type === 'open') {
    // The trial compile can take up to the compile bound: it runs beside the queue, so the masks
    // of running requests never wait for it; the open joins the queue once its spec is vetted.
    const vetted = engine.then((grammars) => grammars.vet(message.spec));
    const joined = vetted.then(
      () => enqueue(message),
      (error: unknown) => {
        const e = asConveyorError(error);
        post({ type: 'failed', id: message.id, code: e.code, message: e.message });
        if (e.code !== 'INVALID_ARG') process.exit(1);
      },
    );
    vetting.set(message.requestId, joined);
    void joined.finally(() => {
      if (vetting.get(message.requestId) === joined) vetting.delete(message.requestId);
    });
    return;
  }
  const opening = message.type === 'release' ? vetting.get(message.requestId) : undefined;
  // A release waits for its request's open to join the queue, so it is never overtaken by it.
  if (opening) void opening.then(() => enqueue(message));
  else enqueue(message);
});
