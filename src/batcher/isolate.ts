// Batch isolation: when an execution of stacked requests fails because the runtime refused its
// inputs (one request's out-of-range token id fails the whole batch in onnxruntime), the batch
// is bisected and each half retried, down to single requests, so only the culprits fail and
// their neighbours get their results. A request that fails on its own is answered INVALID_ARG:
// its inputs passed the config's checks, the instance is alive and the runtime refused them, so
// the cause is this input. Failures of another kind (a worker
// that died, a missing output) fail the group as they are: retrying would not isolate anything.
// With k culprits among n requests this costs at most about 2·k·log2(n) extra executions.

import { ConveyorError, ExecutionRejected, asConveyorError } from '../errors.js';

export type GroupOutcome<R> = { readonly ok: true; readonly value: R } | { readonly ok: false; readonly error: ConveyorError };

export interface IsolationPolicy {
  /** True when the failure is the inputs' (bisecting can find the culprit). */
  isolatable(error: ConveyorError): boolean;
  /** The error a single request gets when it alone fails that way. */
  culprit(error: ConveyorError): ConveyorError;
}

export const RUNTIME_REJECTION_POLICY: IsolationPolicy = {
  isolatable: (error) => error instanceof ExecutionRejected,
  culprit: (error) => new ConveyorError('INVALID_ARG', `the model could not run on this request's input: ${error.message}`),
};

/** The two halves a failed group is retried as (the first gets the extra item). Pure. */
export function bisect<T>(group: readonly T[]): [T[], T[]] {
  const middle = Math.ceil(group.length / 2);
  return [group.slice(0, middle), group.slice(middle)];
}

/**
 * Executes `group` and settles it; on an isolatable failure retries its halves (concurrently,
 * each waits for an instance in `execute`), recursively. `settle` is called once for every
 * group that ends (a successful sub-batch, or one failed request), and every item is in exactly
 * one settled group. Never rejects.
 */
export async function executeIsolating<T, R>(
  group: readonly T[],
  execute: (group: readonly T[]) => Promise<R>,
  settle: (group: readonly T[], outcome: GroupOutcome<R>) => void,
  policy: IsolationPolicy = RUNTIME_REJECTION_POLICY,
): Promise<void> {
  let outcome: GroupOutcome<R>;
  try {
    outcome = { ok: true, value: await execute(group) };
  } catch (thrown) {
    const error = asConveyorError(thrown);
    if (!policy.isolatable(error)) {
      outcome = { ok: false, error };
    } else if (group.length === 1) {
      outcome = { ok: false, error: policy.culprit(error) };
    } else {
      await Promise.all(bisect(group).map((half) => executeIsolating(half, execute, settle, policy)));
      return;
    }
  }
  settle(group, outcome);
}
