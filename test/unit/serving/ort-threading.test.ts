// The per-model intra-op spinning choice: the config parameter's values, a bad value refused with
// the parameter's name, and the session options it opens with (the ORT config entry only when off).
import { describe, expect, it } from 'vitest';
import type { ModelConfig } from '../../../src/contracts/model-config.js';
import { sessionOptionsFor } from '../../../src/runtime/session-factory.js';
import { INTRA_OP_SPINNING_PARAMETER, intraOpSpinningOf } from '../../../src/serving/ort-threading.js';

const withParameter = (value?: string): ModelConfig => ({ parameters: value === undefined ? {} : { [INTRA_OP_SPINNING_PARAMETER]: { string_value: value } } }) as unknown as ModelConfig;

describe('intra_op_allow_spinning', () => {
  it('reads true, false and absent; refuses anything else, naming the parameter', () => {
    expect(intraOpSpinningOf(withParameter('true'))).toBe(true);
    expect(intraOpSpinningOf(withParameter('false'))).toBe(false);
    expect(intraOpSpinningOf(withParameter())).toBeUndefined();
    for (const bad of ['0', 'no', 'TRUE', '']) {
      expect(() => intraOpSpinningOf(withParameter(bad))).toThrow(expect.objectContaining({ code: 'INVALID_ARG', message: `parameter intra_op_allow_spinning must be true or false, got '${bad}'` }));
    }
  });

  it('turns spinning off through the session config entry, and only when asked', () => {
    const request = { modelPath: 'm.onnx', device: 'cpu', intraOpNumThreads: 2 } as const;
    expect(sessionOptionsFor({ ...request, intraOpSpinning: false }, 'cpu').extra).toEqual({ session: { intra_op: { allow_spinning: '0' } } });
    expect(sessionOptionsFor({ ...request, intraOpSpinning: true }, 'cpu').extra).toBeUndefined();
    expect(sessionOptionsFor(request, 'cpu').extra).toBeUndefined();
    expect(sessionOptionsFor({ ...request, intraOpSpinning: false }, 'cpu')).toMatchObject({ intraOpNumThreads: 2, interOpNumThreads: 1 });
  });

  it('stops spinning when a run returns where asked (the segmented decoder), with or without spinning off', () => {
    const request = { modelPath: 'm.onnx', device: 'cpu', intraOpNumThreads: 2 } as const;
    expect(sessionOptionsFor({ ...request, stopSpinningAfterRun: true }, 'cpu').extra).toEqual({ session: { force_spinning_stop: '1' } });
    expect(sessionOptionsFor({ ...request, intraOpSpinning: false, stopSpinningAfterRun: true }, 'cpu').extra).toEqual({ session: { intra_op: { allow_spinning: '0' }, force_spinning_stop: '1' } });
    expect(sessionOptionsFor({ ...request, stopSpinningAfterRun: false }, 'cpu').extra).toBeUndefined();
  });
});
