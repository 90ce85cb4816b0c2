// The compile probe thread (see compile-probe.ts): the vocabulary's tokenizer info, and compiles
// of grammar text that are thrown away — it answers only whether and how fast a grammar compiles.
// The grammar worker terminates it when a compile runs past the bound.

import { parentPort, workerData } from 'node:worker_threads';
import { GrammarEngine } from '../grammar/grammar-engine.js';
import type { CompileProbeData, FromCompileProbe, ToCompileProbe } from './entry.js';

const port = parentPort!;
const { tokenizerPath, vocabSize } = workerData as CompileProbeData;
const engine = await GrammarEngine.open({ tokenizerPath, logitsVocabSize: vocabSize });
const post = (message: FromCompileProbe): void => port.postMessage(message);
post({ type: 'ready' });

port.on('message', async (message: ToCompileProbe) => {
  try {
    post({ type: 'compiled', id: message.id, ms: await engine.trialCompile(message.text) });
  } catch (error) {
    post({ type: 'refused', id: message.id, message: error instanceof Error ? error.message : String(error) });
  }
});
