// The requests a TypeScript model's execute() receives, and the conversion of what it answers
// into messages: outputs normalised through the backend's tensor() (plain values accepted) and
// copied where they are views, failures carried with their catalog code.

import { detached, transferList, type Tensor } from '../contracts/tensors.js';
import type { FromTypeScriptWorker, WireError, WorkerRequest } from '../contracts/typescript-model.js';
import { InferenceError, type InferOptions, type InferResult, type ModelRequest, type ModelResponse, type ResponseSender } from '../backend-api/model-api.js';
import { isTensor, tensor } from '../backend-api/tensors.js';
import type { BlsCalls } from './bls-calls.js';

type Post = (message: FromTypeScriptWorker, transfer?: ArrayBuffer[]) => void;

const describe = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/** A thrown value or a response's error as it crosses to the main thread. */
export function wireError(error: unknown): WireError {
  if (InferenceError.is(error)) return { code: error.code, message: error.message };
  return { code: 'INTERNAL', message: describe(error) };
}

type Converted = { readonly outputs: Tensor[] } | { readonly error: WireError };

/** A model's response as sent: its tensors checked and normalised, or its error. */
function convert(response: ModelResponse | undefined): Converted {
  if (typeof response !== 'object' || response === null) return { error: { code: 'INTERNAL', message: `the model returned ${String(response)} as a response; expected { outputs } or { error }` } };
  if ('error' in response && response.error !== undefined) return { error: typeof response.error === 'string' ? { code: 'INTERNAL', message: response.error } : wireError(response.error) };
  if (!('outputs' in response) || !Array.isArray(response.outputs)) return { error: { code: 'INTERNAL', message: 'the model returned a response without an outputs list' } };
  try {
    const outputs = response.outputs.map((t: unknown, i) => {
      if (!isTensor(t)) throw new Error(`output ${i} of the response is not a tensor ({ name, datatype, shape, data })`);
      return detached(tensor(t.name, t.datatype, t.shape, t.data));
    });
    return { outputs };
  } catch (error) {
    return { error: { code: 'INTERNAL', message: `the model's response is malformed: ${describe(error)}` } };
  }
}

export class WorkerModelRequest implements ModelRequest {
  readonly id: string;
  readonly inputs: readonly Tensor[];
  readonly requestedOutputs: readonly string[];
  readonly parameters: WorkerRequest['parameters'];
  readonly sender?: ResponseSender;
  private readonly controller = new AbortController();
  private completed = false;

  constructor(
    private readonly wire: WorkerRequest,
    decoupled: boolean,
    private readonly post: Post,
    private readonly bls: BlsCalls,
    /** Called once the request has had its final response. */
    private readonly onComplete: () => void,
  ) {
    this.id = wire.id;
    this.inputs = wire.inputs;
    this.requestedOutputs = wire.requestedOutputs;
    this.parameters = wire.parameters;
    if (decoupled) this.sender = this.makeSender();
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  seqOf(): number {
    return this.wire.seq;
  }

  get done(): boolean {
    return this.completed;
  }

  isCancelled(): boolean {
    return this.controller.signal.aborted;
  }

  cancel(): void {
    this.controller.abort(new InferenceError('request cancelled', 'CANCELLED'));
  }

  input(name: string): Tensor {
    const found = this.inputs.find((t) => t.name === name);
    if (!found) throw new InferenceError(`the request has no input '${name}'`, 'INVALID_ARG');
    return found;
  }

  infer(model: string, inputs: readonly Tensor[], options: InferOptions = {}): Promise<InferResult> {
    return this.bls.infer(this.wire.seq, this.signal, model, inputs, options);
  }

  inferStream(model: string, inputs: readonly Tensor[], options: InferOptions = {}): AsyncIterable<InferResult> {
    return this.bls.stream(this.wire.seq, this.signal, model, inputs, options, true);
  }

  /** Sends one response (the only one, for a model that is not decoupled). Ignored once complete. */
  respond(response: ModelResponse | undefined, final: boolean): void {
    if (this.completed) return;
    const converted = convert(response);
    // An error response ends the request: its client gets the error and nothing after it.
    const ends = final || 'error' in converted;
    if (ends) this.completed = true;
    if ('error' in converted) this.post({ type: 'response', seq: this.wire.seq, error: converted.error, final: true });
    else this.post({ type: 'response', seq: this.wire.seq, outputs: converted.outputs, final }, transferList(converted.outputs));
    if (ends) this.onComplete();
  }

  /** Ends the request without a response (a decoupled model's flags-only final). */
  close(): void {
    if (this.completed) return;
    this.completed = true;
    this.post({ type: 'response', seq: this.wire.seq, final: true });
    this.onComplete();
  }

  private makeSender(): ResponseSender {
    const request = this;
    return {
      send: (response, options) => {
        if (request.completed) throw new InferenceError('the request is complete: its final response was already sent');
        request.respond(response, options?.final === true);
      },
      close: () => request.close(),
      get closed() {
        return request.completed;
      },
    };
  }
}
