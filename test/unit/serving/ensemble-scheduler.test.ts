// The ensemble DAG scheduler with step executors written by the test: branches run at once, a
// failing step names itself and stops the rest, cancellation, BYTES and shared tensors.
import { describe, expect, it } from 'vitest';
import type { Tensor } from '../../../src/contracts/tensors.js';
import { ConveyorError } from '../../../src/errors.js';
import { runEnsemble, type EnsemblePlan, type PlannedStep, type StepExecutor } from '../../../src/serving/ensemble-scheduler.js';

const step = (index: number, modelName: string, inputs: Record<string, string>, outputs: Record<string, string>): PlannedStep => ({
  index,
  modelName,
  inputs: Object.entries(inputs).map(([modelInput, tensor]) => ({ modelInput, tensor })),
  outputs: Object.entries(outputs).map(([modelOutput, tensor]) => ({ modelOutput, tensor })),
});
const fp32 = (name: string, values: number[]): Tensor => ({ name, datatype: 'FP32', shape: [values.length], data: Float32Array.from(values) });
const values = (t: Tensor): number[] => Array.from(t.data as Float32Array);

/** pre → (double, negate) in parallel. */
const fork: EnsemblePlan = {
  name: 'fork',
  steps: [step(0, 'pre', { x: 'IN' }, { y: 'mid' }), step(1, 'double', { x: 'mid' }, { y: 'A' }), step(2, 'negate', { x: 'mid' }, { y: 'B' })],
};

/** An executor whose steps finish only when the test says so, recording what ran when. */
function controlled() {
  const started: string[] = [];
  const pending = new Map<string, { inputs: readonly Tensor[]; finish: (outputs: Tensor[]) => void; fail: (e: Error) => void; signal: AbortSignal }>();
  const execute: StepExecutor = (s, inputs, signal) =>
    new Promise((finish, fail) => {
      started.push(s.modelName);
      pending.set(s.modelName, { inputs, finish, fail, signal });
    });
  return { started, pending, execute };
}

const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('runEnsemble', () => {
  it('starts a step once its inputs exist and runs independent branches together', async () => {
    const { started, pending, execute } = controlled();
    const result = runEnsemble(fork, [fp32('IN', [1, 2])], ['A', 'B'], execute);
    await settle();
    expect(started).toEqual(['pre']);
    expect(values(pending.get('pre')!.inputs[0]!)).toEqual([1, 2]);
    expect(pending.get('pre')!.inputs[0]!.name).toBe('x');
    pending.get('pre')!.finish([fp32('y', [3, 4])]);
    await settle();
    // Both branches are running before either finishes.
    expect(started).toEqual(['pre', 'double', 'negate']);
    pending.get('negate')!.finish([fp32('y', [-3, -4])]);
    pending.get('double')!.finish([fp32('y', [6, 8])]);
    const [a, b] = await result;
    expect(a).toMatchObject({ name: 'A' });
    expect(values(a!)).toEqual([6, 8]);
    expect(values(b!)).toEqual([-3, -4]);
  });

  it('gives every reader but the last its own copy of a shared tensor', async () => {
    const { pending, execute } = controlled();
    const result = runEnsemble(fork, [fp32('IN', [1])], ['A', 'B'], execute);
    await settle();
    const mid = fp32('y', [5]);
    pending.get('pre')!.finish([mid]);
    await settle();
    const first = pending.get('double')!.inputs[0]!.data;
    const second = pending.get('negate')!.inputs[0]!.data;
    expect(first === mid.data || second === mid.data).toBe(true);
    expect(first).not.toBe(second);
    pending.get('double')!.finish([fp32('y', [10])]);
    pending.get('negate')!.finish([fp32('y', [-5])]);
    await result;
  });

  it('passes BYTES tensors between steps', async () => {
    const plan: EnsemblePlan = { name: 'text', steps: [step(0, 'upper', { text: 'IN' }, { out: 'mid' }), step(1, 'echo', { text: 'mid' }, { out: 'OUT' })] };
    const encoder = new TextEncoder();
    const decoder = new TextDecoder();
    const execute: StepExecutor = async (s, inputs) => {
      const texts = (inputs[0]!.data as Uint8Array[]).map((b) => decoder.decode(b));
      const out = s.modelName === 'upper' ? texts.map((t) => t.toUpperCase()) : texts;
      return [{ name: 'out', datatype: 'BYTES', shape: [out.length], data: out.map((t) => encoder.encode(t)) }];
    };
    const [out] = await runEnsemble(plan, [{ name: 'IN', datatype: 'BYTES', shape: [2], data: [encoder.encode('ab'), encoder.encode('c')] }], ['OUT'], execute);
    expect((out!.data as Uint8Array[]).map((b) => decoder.decode(b))).toEqual(['AB', 'C']);
    expect(out).toMatchObject({ name: 'OUT', datatype: 'BYTES', shape: [2] });
  });

  it('fails with the step’s own error, naming the step, and tells the steps still running to stop', async () => {
    const { pending, execute } = controlled();
    const result = runEnsemble(fork, [fp32('IN', [1])], ['A', 'B'], execute);
    await settle();
    pending.get('pre')!.finish([fp32('y', [1])]);
    await settle();
    pending.get('negate')!.fail(new ConveyorError('INVALID_ARG', 'input x is out of range'));
    await expect(result).rejects.toMatchObject({ code: 'INVALID_ARG', message: "ensemble 'fork' step 3 ('negate'): input x is out of range" });
    expect(pending.get('double')!.signal.aborted).toBe(true);
  });

  it('a step executor that throws at once fails like any step', async () => {
    const execute: StepExecutor = () => {
      throw new ConveyorError('UNAVAILABLE', "Request for unknown model: 'pre' has no available versions");
    };
    await expect(runEnsemble(fork, [fp32('IN', [1])], ['A'], execute)).rejects.toMatchObject({
      code: 'UNAVAILABLE',
      message: "ensemble 'fork' step 1 ('pre'): Request for unknown model: 'pre' has no available versions",
    });
  });

  it('cancellation rejects at once, stops the running steps and starts no more', async () => {
    const { started, pending, execute } = controlled();
    const abort = new AbortController();
    const result = runEnsemble(fork, [fp32('IN', [1])], ['A', 'B'], execute, abort.signal);
    await settle();
    abort.abort();
    await expect(result).rejects.toMatchObject({ code: 'CANCELLED' });
    expect(pending.get('pre')!.signal.aborted).toBe(true);
    pending.get('pre')!.finish([fp32('y', [1])]);
    await settle();
    expect(started).toEqual(['pre']);
  });

  it('a signal already aborted runs nothing', async () => {
    const { started, execute } = controlled();
    await expect(runEnsemble(fork, [fp32('IN', [1])], ['A'], execute, AbortSignal.abort())).rejects.toMatchObject({ code: 'CANCELLED' });
    expect(started).toEqual([]);
  });

  it('a step that returns without a mapped output is an internal error naming it', async () => {
    const execute: StepExecutor = async () => [fp32('other', [1])];
    await expect(runEnsemble(fork, [fp32('IN', [1])], ['A'], execute)).rejects.toMatchObject({ code: 'INTERNAL', message: "ensemble 'fork' step 1 ('pre'): the model returned no output 'y'" });
  });
});
