// Creates onnxruntime-node sessions: execution provider choice with a logged CPU fallback,
// thread settings, and the session's I/O metadata in plain data.

import * as ort from 'onnxruntime-node';
import type { Device, SessionMetadata, TensorInfo } from '../contracts/worker-messages.js';

export interface SessionRequest {
  readonly modelPath: string;
  readonly device: Device;
  /** 0 lets ORT pick (one per core). */
  readonly intraOpNumThreads: number;
  /** false: intra-op threads sleep between parallel sections instead of spinning; absent: ORT's default (spin). */
  readonly intraOpSpinning?: boolean | undefined;
  /**
   * true: spinning threads stop as soon as a run returns (ORT's session.force_spinning_stop)
   * instead of spinning on for a while: for sessions run back to back with other work between
   * them (the segmented decoder), whose idle pools would otherwise take the cores from it.
   */
  readonly stopSpinningAfterRun?: boolean | undefined;
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
    // onnxruntime-common flattens `extra` into session config entries: session.intra_op.allow_spinning, session.force_spinning_stop.
    ...(request.intraOpSpinning === false || request.stopSpinningAfterRun
      ? {
          extra: {
            session: {
              ...(request.intraOpSpinning === false ? { intra_op: { allow_spinning: '0' } } : {}),
              ...(request.stopSpinningAfterRun ? { force_spinning_stop: '1' } : {}),
            },
          },
        }
      : {}),
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

export function describeSession(session: ort.InferenceSession): SessionMetadata {
  const describe = (list: readonly ort.InferenceSession.ValueMetadata[]): TensorInfo[] =>
    list.map((m) => {
      const tensor = m as unknown as { name: string; type: TensorInfo['type']; shape: readonly (number | string)[] };
      return { name: tensor.name, type: tensor.type, shape: [...tensor.shape] };
    });
  return { inputs: describe(session.inputMetadata), outputs: describe(session.outputMetadata) };
}
