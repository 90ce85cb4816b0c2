import { describe, expect, it } from 'vitest';
import { DEFAULT_TRACE_SETTINGS, TraceSettings, traceUpdateProblem } from '../../../src/config/trace-settings.js';

describe('trace settings', () => {
  it('a model sees the global settings overlaid with its own; null drops its own value', () => {
    const trace = new TraceSettings();
    expect(trace.update({ trace_rate: ['5'] }, 'm')).toEqual({ settings: { ...DEFAULT_TRACE_SETTINGS, trace_rate: ['5'] } });
    expect(trace.update({ trace_level: ['TIMESTAMPS', 'TENSORS'] })).toEqual({ settings: { ...DEFAULT_TRACE_SETTINGS, trace_level: ['TIMESTAMPS', 'TENSORS'] } });
    expect(trace.get('m')).toEqual({ ...DEFAULT_TRACE_SETTINGS, trace_level: ['TIMESTAMPS', 'TENSORS'], trace_rate: ['5'] });
    expect(trace.get('other')).toEqual(trace.get());
    trace.update({ trace_rate: null }, 'm');
    expect(trace.get('m')).toEqual(trace.get());
  });

  it('a refused update changes nothing', () => {
    const trace = new TraceSettings();
    expect(trace.update({ trace_rate: ['2'], trace_count: ['-2'] })).toEqual({ error: "trace setting 'trace_count' must be an integer >= -1, got '-2'" });
    expect(trace.get()).toEqual(DEFAULT_TRACE_SETTINGS);
  });

  it.each([
    [{ trace_level: [] }, false, /at least one level/],
    [{ trace_level: ['OFF', 'TENSORS'] }, false, /cannot combine OFF/],
    [{ trace_level: ['DEBUG'] }, false, /levels are OFF, TIMESTAMPS, TENSORS/],
    [{ trace_rate: ['0'] }, false, /trace_rate' must be an integer >= 1/],
    [{ log_frequency: ['1', '2'] }, false, /exactly one value/],
    [{ trace_file: null }, false, /cannot be cleared globally/],
    [{ trace_config: ['x'] }, true, /unknown trace setting 'trace_config'/],
  ])('refuses %j (per model: %s)', (update, forModel, message) => {
    expect(traceUpdateProblem(update, forModel)).toMatch(message);
  });

  it('accepts every setting in range, and null for a model', () => {
    expect(traceUpdateProblem({ trace_file: ['t.json'], trace_level: ['TENSORS'], trace_rate: ['1'], trace_count: ['-1'], log_frequency: ['0'] }, false)).toBeUndefined();
    expect(traceUpdateProblem({ trace_level: null }, true)).toBeUndefined();
  });
});
