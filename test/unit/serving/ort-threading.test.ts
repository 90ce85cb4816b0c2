// The per-model intra-op spinning choice: the config parameter's values, a bad value refused with
// the parameter's name, and the session options it opens with (allow_spinning only when off;
// force_spinning_stop always).
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

  it('turns spinning off through the session config entry only when asked, and every session stops spinning when its run returns', () => {
    const request = { modelPath: 'm.onnx', device: 'cpu', intraOpNumThreads: 2 } as const;
    expect(sessionOptionsFor({ ...request, intraOpSpinning: false }, 'cpu').extra).toEqual({ session: { intra_op: { allow_spinning: '0' }, force_spinning_stop: '1' } });
    expect(sessionOptionsFor({ ...request, intraOpSpinning: true }, 'cpu').extra).toEqual({ session: { force_spinning_stop: '1' } });
    expect(sessionOptionsFor(request, 'cpu').extra).toEqual({ session: { force_spinning_stop: '1' } });
    expect(sessionOptionsFor(request, 'cuda').extra).toEqual({ session: { force_spinning_stop: '1' } });
    expect(sessionOptionsFor({ ...request, intraOpSpinning: false }, 'cpu')).toMatchObject({ intraOpNumThreads: 2, interOpNumThreads: 1 });
  });
});
