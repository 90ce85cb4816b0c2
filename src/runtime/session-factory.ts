// Creates onnxruntime-node sessions: execution provider choice with a logged CPU fallback,
// thread settings, and the session's I/O metadata (and the model file's metadata_props) in plain data.

import * as ort from 'onnxruntime-node';
import type { Device, SessionMetadata, TensorInfo } from '../contracts/worker-messages.js';
import { readModelProperties } from './model-properties.js';

export interface SessionRequest {
  readonly modelPath: string;
  readonly device: Device;
  /** 0 lets ORT pick (one per core). */
  readonly intraOpNumThreads: number;
  /** false: intra-op threads sleep between parallel sections instead of spinning; absent: ORT's default (spin). */
  readonly intraOpSpinning?: boolean | undefined;
}

export interface OpenedSession {
  readonly session: ort.InferenceSession;
  /** The device actually used. */
  readonly device: Device;
  /** Why the device differs from the request, if it does. */
  readonly note?: string;
}

/** The session options a request opens with (exported for the unit test of the mapping). */
export function sessionOptionsFor(request: SessionRequest, device: Device): ort.InferenceSession.SessionOptions {
  return {
    executionProviders: device === 'cuda' ? ['cuda', 'cpu'] : ['cpu'],
    intraOpNumThreads: request.intraOpNumThreads,
    interOpNumThreads: 1,
    graphOptimizationLevel: 'all',
    logSeverityLevel: 3,
    // onnxruntime-common flattens `extra` into session config entries. Every session's threads
    // stop spinning when its run returns (session.force_spinning_stop): a pool spinning on after
    // its run takes the cores from whatever runs next — another model's session, the segmented
    // decoder's next segment, the paged-attention kernel, the event loops. Measured with two
    // decoders served (2 cores, bench -- precision, requests alternating, old code beside new):
    // 3–15% more tokens/s at one stream, 18% at 32, and no loss with one model alone
    // (bench/results/2026-12-04-spin-stop-*). Spinning within a run stays ORT's default
    // unless the model turns it off (session.intra_op.allow_spinning).
    extra: {
      session: {
        ...(request.intraOpSpinning === false ? { intra_op: { allow_spinning: '0' } } : {}),
        force_spinning_stop: '1',
      },
    },
  };
}

export async function openSession(request: SessionRequest): Promise<OpenedSession> {
  if (request.device === 'cuda') {
    try {
      return { session: await ort.InferenceSession.create(request.modelPath, sessionOptionsFor(request, 'cuda')), device: 'cuda' };
    } catch (error) {
      // onnxruntime-node ships the CUDA provider only when installed with ONNXRUNTIME_NODE_INSTALL=cuda12.
      const reason = error instanceof Error ? error.message.split('\n')[0] : String(error);
      const session = await ort.InferenceSession.create(request.modelPath, sessionOptionsFor(request, 'cpu'));
      return { session, device: 'cpu', note: `CUDA execution provider unavailable (${reason}); running on CPU` };
    }
  }
  return { session: await ort.InferenceSession.create(request.modelPath, sessionOptionsFor(request, 'cpu')), device: 'cpu' };
}

export function describeSession(session: ort.InferenceSession, modelPath: string): SessionMetadata {
  const describe = (list: readonly ort.InferenceSession.ValueMetadata[]): TensorInfo[] =>
    list.map((m) => {
      const tensor = m as unknown as { name: string; type: TensorInfo['type']; shape: readonly (number | string)[] };
      return { name: tensor.name, type: tensor.type, shape: [...tensor.shape] };
    });
  return { inputs: describe(session.inputMetadata), outputs: describe(session.outputMetadata), properties: readModelProperties(modelPath) };
}
