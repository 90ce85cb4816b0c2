// The worker's side of model-to-model calls (BLS): each call is a message to the main thread,
// which runs it through the serving path and answers with one message per response. A call
// belongs to the request that made it: when that request is cancelled, its calls still in
// flight end CANCELLED and the main thread is told to stop them.

import type { RequestedOutput } from '../contracts/infer.js';
import { detached, transferList, type Tensor } from '../contracts/tensors.js';
import type { BlsRequest, BlsResponse, FromTypeScriptWorker, ToTypeScriptWorker } from '../contracts/typescript-model.js';
import { InferenceError, type InferOptions, type InferResult } from '../backend-api/model-api.js';

type Answer = Extract<ToTypeScriptWorker, { type: 'bls-answer' }>;
type Post = (message: FromTypeScriptWorker, transfer?: ArrayBuffer[]) => void;

interface Call {
  /** Answers not yet read, and the reader waiting for the next one. */
  readonly answers: Answer[];
  wake?: () => void;
  failure?: InferenceError;
}

function resultOf(response: BlsResponse): InferResult {
  return {
    ...response,
    output(name: string): Tensor {
      const found = response.outputs.find((t) => t.name === name);
      if (!found) throw new InferenceError(`model '${response.model}' returned no output '${name}' (it returned ${response.outputs.map((t) => `'${t.name}'`).join(', ') || 'none'})`);
      return found;
    },
  };
}

function requestOf(model: string, inputs: readonly Tensor[], options: InferOptions): BlsRequest {
  const outputs = options.outputs?.map((o): RequestedOutput => (typeof o === 'string' ? { name: o, parameters: {} } : o));
  return {
    model,
    ...(options.version !== undefined ? { version: String(options.version) } : {}),
    inputs: inputs.map(detached),
    ...(outputs ? { outputs } : {}),
    parameters: options.parameters ?? {},
  };
}

export class BlsCalls {
  private nextCall = 1;
  private readonly calls = new Map<number, Call>();

  constructor(private readonly post: Post) {}

  /** Calls `model` on behalf of request `seq` and yields its responses until the final one. */
  async *stream(seq: number, signal: AbortSignal, model: string, inputs: readonly Tensor[], options: InferOptions, stream: boolean): AsyncGenerator<InferResult> {
    if (signal.aborted) throw cancelled(model);
    const id = this.nextCall++;
    const call: Call = { answers: [] };
    this.calls.set(id, call);
    const onAbort = (): void => {
      call.failure = cancelled(model);
      call.wake?.();
    };
    signal.addEventListener('abort', onAbort, { once: true });
    const request = requestOf(model, inputs, options);
    let finished = false;
    try {
      this.post({ type: 'bls', call: id, seq, request, stream }, transferList(request.inputs));
      for (;;) {
        while (call.answers.length === 0 && call.failure === undefined) await new Promise<void>((resolve) => (call.wake = resolve));
        if (call.failure) throw call.failure;
        const answer = call.answers.shift()!;
        if (answer.error) {
          finished = true;
          throw new InferenceError(answer.error.message, answer.error.code);
        }
        if (answer.final) finished = true;
        if (answer.response) yield resultOf(answer.response);
        if (answer.final) return;
      }
    } finally {
      signal.removeEventListener('abort', onAbort);
      this.calls.delete(id);
      // Left early (a stream the model stopped reading, a cancelled request): stop the call.
      if (!finished) this.post({ type: 'bls-cancel', call: id });
    }
  }

  /** One call's single response. */
  async infer(seq: number, signal: AbortSignal, model: string, inputs: readonly Tensor[], options: InferOptions): Promise<InferResult> {
    for await (const result of this.stream(seq, signal, model, inputs, options, false)) return result;
    throw new InferenceError(`model '${model}' sent no response`);
  }

  answer(message: Answer): void {
    const call = this.calls.get(message.call);
    if (!call) return;
    call.answers.push(message);
    call.wake?.();
  }
}

const cancelled = (model: string): InferenceError => new InferenceError(`the call to model '${model}' was cancelled: its request was cancelled`, 'CANCELLED');
