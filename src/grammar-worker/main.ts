// The grammar worker thread (see entry.ts): jobs run one at a time, in arrival order, so a
// release never overtakes the masks of the step that still reads the request, and a compile
// queued behind a step's masks waits for them rather than the other way round. A job that fails
// for any reason but a refused spec leaves xgrammar's state unknown: the worker reports it and
// exits, and the engine fails its constrained rows and starts a fresh worker on the next one.

import { parentPort, workerData } from 'node:worker_threads';
import { asConveyorError } from '../errors.js';
import { GrammarEngine } from '../grammar/grammar-engine.js';
import type { ConstraintMatcher } from '../grammar/matcher.js';
import type { FromGrammarWorker, GrammarWorkerData, MaskJob, MaskResult, ToGrammarWorker } from './entry.js';

const port = parentPort!;
const { tokenizerPath, vocabSize } = workerData as GrammarWorkerData;
const engine = GrammarEngine.open({ tokenizerPath, logitsVocabSize: vocabSize });
const matchers = new Map<string, ConstraintMatcher>();
const post = (message: FromGrammarWorker, transfer: ArrayBuffer[] = []): void => port.postMessage(message, transfer);

async function open(requestId: string, message: Extract<ToGrammarWorker, { type: 'open' }>): Promise<void> {
  const grammars = await engine;
  const constraint = await grammars.compile(message.spec);
  matchers.get(requestId)?.dispose();
  matchers.set(requestId, await grammars.matcher(constraint, message.stopTokenIds));
}

async function mask(job: MaskJob): Promise<MaskResult> {
  const matcher = matchers.get(job.requestId);
  if (!matcher) return { requestId: job.requestId, mask: null, accepted: 0, refused: false };
  matcher.rollBack(job.rollBack);
  let refused = false;
  for (const token of job.accept) {
    if (matcher.accept(token)) continue;
    refused = true;
    break;
  }
  return { requestId: job.requestId, mask: await matcher.nextTokenMask(), accepted: matcher.numAccepted, refused };
}

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
    const masks: MaskResult[] = [];
    for (const job of message.rows) masks.push(await mask(job));
    const buffers = masks.flatMap((m) => (m.mask ? [m.mask.buffer as ArrayBuffer] : []));
    post({ type: 'masks', id: message.id, masks, ms: performance.now() - started }, buffers);
  } catch (error) {
    const e = asConveyorError(error);
    post({ type: 'failed', id: message.id, code: e.code, message: e.message });
    if (e.code !== 'INVALID_ARG') process.exit(1);
  }
}

let queue = Promise.resolve();
port.on('message', (message: ToGrammarWorker) => {
  queue = queue.then(() => run(message));
});
