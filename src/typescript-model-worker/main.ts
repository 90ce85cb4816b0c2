// A TypeScript model's instance: one worker thread running one instance of the class a model.ts /
// model.js exports (Triton's Python backend stub, for TypeScript). It imports the model file,
// calls initialize(args), then runs each batch the dynamic batcher sends through execute() and
// posts one message per response. What execute() throws fails its batch; anything that breaks
// the thread itself (process.exit, an uncaught error, a hang the main thread times out) ends the
// worker, and the instances' supervisor starts a fresh one.

import { register } from 'node:module';
import { dirname } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parentPort, workerData } from 'node:worker_threads';
import type { FromTypeScriptWorker, ToTypeScriptWorker, TypeScriptWorkerData } from '../contracts/typescript-model.js';
import type { TypeScriptModel } from '../backend-api/model-api.js';
import { runnableEntry } from '../threads/spawn-worker.js';
import { lowerThisThreadPriority } from '../threads/thread-priority.js';
import { BlsCalls } from './bls-calls.js';
import { WorkerModelRequest, wireError } from './model-requests.js';

const port = parentPort!;
const data = workerData as TypeScriptWorkerData;
const post = (message: FromTypeScriptWorker, transfer: ArrayBuffer[] = []): void => port.postMessage(message, transfer);
const describe = (error: unknown): string => (error instanceof Error ? error.message : String(error));
const now = (): bigint => process.hrtime.bigint();

/** `conveyor/backend` and the server's packages, for a model file outside this package (resolve-hooks.mjs). */
async function registerModuleResolution(): Promise<void> {
  const compiled = import.meta.url.endsWith('.js');
  // A compiled server has no TypeScript loader in its workers; a model.ts brings one in.
  if (compiled && data.modelFile.endsWith('.ts')) {
    const { register: registerTsx } = await import('tsx/esm/api').catch(() => {
      throw new Error(`'${data.modelFile}' is TypeScript and this server runs compiled without tsx installed: ship model.js, or install tsx`);
    });
    registerTsx();
  }
  const backend = runnableEntry(new URL('../backend-api/index.ts', import.meta.url), import.meta.url);
  register(new URL('./resolve-hooks.mjs', import.meta.url), {
    data: {
      aliases: { 'conveyor/backend': backend.href },
      fallbackParent: new URL('../../package.json', import.meta.url).href,
      modelDir: `${pathToFileURL(dirname(data.modelFile)).href}/`,
    },
  });
}

/** The exported class: the default export, or one named TritonPythonModel. */
async function loadModel(): Promise<TypeScriptModel> {
  const module = (await import(pathToFileURL(data.modelFile).href)) as Record<string, unknown>;
  const Model = module.default ?? module.TritonPythonModel;
  if (typeof Model !== 'function')
    throw new Error(`'${data.args.model_name}/${data.args.model_version}/${data.modelFile.split('/').at(-1)}' exports no model class (a default export, or one named TritonPythonModel)`);
  const model = new (Model as new () => TypeScriptModel)();
  if (typeof model.execute !== 'function') throw new Error(`the model class of '${data.args.model_name}' has no execute(requests) method`);
  return model;
}

async function main(): Promise<void> {
  let model: TypeScriptModel;
  try {
    lowerThisThreadPriority(data.threadNice ?? 0);
    await registerModuleResolution();
    model = await loadModel();
    await model.initialize?.(data.args);
  } catch (error) {
    post({ type: 'fatal', message: describe(error) });
    process.exit(1);
  }
  const bls = new BlsCalls(post);
  const live = new Map<number, WorkerModelRequest>();

  const execute = async (message: Extract<ToTypeScriptWorker, { type: 'execute' }>): Promise<void> => {
    const started = now();
    const requests = message.requests.map((wire) => {
      const request = new WorkerModelRequest(wire, data.decoupled, post, bls, () => live.delete(wire.seq));
      live.set(wire.seq, request);
      return request;
    });
    const inputReady = now();
    try {
      const returned = await model.execute(requests);
      const inferDone = now();
      if (!data.decoupled) {
        if (!Array.isArray(returned) || returned.length !== requests.length) {
          const got = Array.isArray(returned) ? `${returned.length} responses` : String(returned);
          throw new Error(`execute() returned ${got} for ${requests.length} requests; it must return one response per request, in order`);
        }
        returned.forEach((response, i) => requests[i]!.respond(response, true));
      }
      const timings = { computeInputNs: Number(inputReady - started), computeInferNs: Number(inferDone - inputReady), computeOutputNs: Number(now() - inferDone) };
      post({ type: 'executed', batch: message.batch, timings });
    } catch (error) {
      const timings = { computeInputNs: Number(inputReady - started), computeInferNs: Number(now() - inputReady), computeOutputNs: 0 };
      for (const request of requests) if (!request.done) live.delete(request.seqOf());
      post({ type: 'executed', batch: message.batch, timings, error: wireError(error) });
    }
  };

  port.on('message', (message: ToTypeScriptWorker) => {
    switch (message.type) {
      case 'execute':
        void execute(message);
        return;
      case 'cancel':
        live.get(message.seq)?.cancel();
        return;
      case 'bls-answer':
        bls.answer(message);
        return;
      case 'finalize':
        Promise.resolve(model.finalize?.())
          .catch((error: unknown) => post({ type: 'fatal', message: `finalize() failed: ${describe(error)}` }))
          .finally(() => {
            post({ type: 'finalized' });
            port.close();
          });
        return;
    }
  });
  post({ type: 'ready' });
}

void main();
