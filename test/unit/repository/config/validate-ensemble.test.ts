// Triton's ensemble rules: each one refused with the field and its position in config.pbtxt, and
// the checks against composing models' configs naming the step and the map entry.
import { describe, expect, it } from 'vitest';
import { checkComposingModels } from '../../../../src/repository/config/validate-ensemble.js';
import { expectError, parseConfig } from './helpers.js';

const parse = (text: string, dir = 'e') => parseConfig(text, dir);
const step = (model: string, inputs: Record<string, string>, outputs: Record<string, string>, extra = '') =>
  `{ model_name: "${model}" model_version: -1 ${extra}${Object.entries(inputs)
    .map(([k, v]) => `input_map { key: "${k}" value: "${v}" } `)
    .join('')}${Object.entries(outputs)
    .map(([k, v]) => `output_map { key: "${k}" value: "${v}" } `)
    .join('')}}`;
/** Line 1 platform, line 2 max_batch_size, line 3 input, line 4 output, line 5 the steps. */
const ensemble = (steps: string[], inputs = ['IN'], outputs = ['OUT'], extra = '') =>
  `platform: "ensemble"
max_batch_size: 4
input [ ${inputs.map((n) => `{ name: "${n}" data_type: TYPE_FP32 dims: [ 3 ] }`).join(', ')} ]
output [ ${outputs.map((n) => `{ name: "${n}" data_type: TYPE_FP32 dims: [ 3 ] }`).join(', ')} ]
ensemble_scheduling { step [ ${steps.join(', ')} ] }
${extra}`;

describe('ensemble config rules', () => {
  it('accepts a pipeline with a fork, leaving instance_group empty and backend unset', () => {
    const config = parse(ensemble([step('pre', { x: 'IN' }, { y: 'mid' }), step('a', { x: 'mid' }, { y: 'OUT' }), step('b', { x: 'mid' }, { y: 'OUT2' })], ['IN'], ['OUT', 'OUT2']));
    expect(config).toMatchObject({ platform: 'ensemble', backend: '', instance_group: [] });
    expect(config.ensemble_scheduling!.step.map((s) => s.model_name)).toEqual(['pre', 'a', 'b']);
  });

  it('platform and scheduling come together', () => {
    expectError(
      () => parse('platform: "ensemble"\ninput [ { name: "IN" data_type: TYPE_FP32 dims: [ 1 ] } ]'),
      "config.pbtxt:1:1: platform 'ensemble' needs ensemble_scheduling with one or more steps",
    );
    expectError(
      () => parse('backend: "onnxruntime"\nensemble_scheduling { step [ { model_name: "a" } ] }'),
      "config.pbtxt:2:1: ensemble_scheduling is set, but the platform is 'onnxruntime_onnx'; only platform 'ensemble' takes it",
    );
    expectError(() => parse('platform: "ensemble"\nbackend: "onnxruntime"'), "config.pbtxt:2:1: platform 'ensemble' takes no backend, got backend 'onnxruntime'");
    expectError(() => parse(ensemble([])), "config.pbtxt:5:23: ensemble_scheduling of ensemble 'e' must list one or more steps");
  });

  it('refuses instance_group and model_warmup', () => {
    expectError(
      () => parse(ensemble([step('a', { x: 'IN' }, { y: 'OUT' })], ['IN'], ['OUT'], 'instance_group [ { count: 2 } ]')),
      "config.pbtxt:6:1: instance_group cannot be set for ensemble 'e': its composing models have their own",
    );
    expectError(() => parse(ensemble([step('a', { x: 'IN' }, { y: 'OUT' })], ['IN'], ['OUT'], 'model_warmup [ { name: "w" } ]')), "config.pbtxt:6:1: model_warmup cannot be set for ensemble 'e'");
  });

  it('each step names a model other than itself, a valid version, and both maps', () => {
    expectError(() => parse(ensemble([step('', { x: 'IN' }, { y: 'OUT' })])), "config.pbtxt:5:32: ensemble_scheduling.step[1] must set 'model_name'");
    expectError(() => parse(ensemble([step('e', { x: 'IN' }, { y: 'OUT' })])), "config.pbtxt:5:32: ensemble_scheduling.step[1] ('e') names the ensemble itself; an ensemble cannot contain itself");
    expectError(
      () => parse(ensemble([step('a', { x: 'IN' }, { y: 'OUT' }).replace('model_version: -1', 'model_version: -2')])),
      "config.pbtxt:5:48: ensemble_scheduling.step[1] ('a') model_version must be -1 (the latest) or a version >= 1, got -2",
    );
    expectError(
      () => parse(ensemble([step('a', {}, { y: 'OUT' })])),
      "config.pbtxt:5:30: ensemble_scheduling.step[1] ('a') must set 'input_map' (key: the model's input name, value: an ensemble tensor name)",
    );
    expectError(
      () => parse(ensemble([step('a', { x: 'IN' }, {})])),
      "config.pbtxt:5:30: ensemble_scheduling.step[1] ('a') must set 'output_map' (key: the model's output name, value: an ensemble tensor name)",
    );
  });

  it('a tensor is written once, never over an ensemble input', () => {
    expectError(
      () => parse(ensemble([step('a', { x: 'IN' }, { y: 'OUT' }), step('b', { x: 'IN' }, { z: 'OUT' })])),
      "config.pbtxt:5:223: ensemble_scheduling.step[2] ('b') output_map 'z' writes ensemble tensor 'OUT', already written by ensemble_scheduling.step[1] ('a'); an ensemble tensor can appear in an output_map only once",
    );
    expectError(
      () => parse(ensemble([step('a', { x: 'IN' }, { y: 'OUT', z: 'IN' })])),
      "config.pbtxt:5:149: ensemble_scheduling.step[1] ('a') output_map 'z' writes ensemble tensor 'IN', which is an input of the ensemble",
    );
  });

  it('every tensor read is written, every input read, every output written', () => {
    expectError(
      () => parse(ensemble([step('a', { x: 'IN', w: 'nowhere' }, { y: 'OUT' })])),
      "config.pbtxt:5:111: ensemble_scheduling.step[1] ('a') input_map 'w' reads ensemble tensor 'nowhere', which is neither an ensemble input nor written by any step's output_map",
    );
    expectError(() => parse(ensemble([step('a', { x: 'IN' }, { y: 'OUT' })], ['IN', 'UNUSED'])), "config.pbtxt:3:60: ensemble input 'UNUSED' is not read by any step's input_map");
    expectError(() => parse(ensemble([step('a', { x: 'IN' }, { y: 'OUT' })], ['IN'], ['OUT', 'NEVER'])), "config.pbtxt:4:62: ensemble output 'NEVER' is not written by any step's output_map");
  });

  it('refuses a cycle, naming the steps on it', () => {
    expectError(
      () => parse(ensemble([step('a', { x: 'IN', c: 'from_c' }, { y: 'from_a' }), step('b', { x: 'from_a' }, { y: 'from_b' }), step('c', { x: 'from_b' }, { y: 'from_c', z: 'OUT' })])),
      "config.pbtxt:5:23: ensemble_scheduling steps of ensemble 'e' form a cycle: step[1] ('a') → step[2] ('b') → step[3] ('c') → step[1] ('a')",
    );
  });
});

describe('checkComposingModels', () => {
  const model = (name: string, batch: number, input: string, output: string) =>
    parseConfig(`name: "${name}"\nbackend: "onnxruntime"\nmax_batch_size: ${batch}\ninput [ ${input} ]\noutput [ ${output} ]`, name);
  const fp32 = (name: string, dims = '3') => `{ name: "${name}" data_type: TYPE_FP32 dims: [ ${dims} ] }`;
  const e = parse(ensemble([step('a', { x: 'IN' }, { y: 'mid' }), step('b', { x: 'mid' }, { y: 'OUT' })]));

  it('accepts models whose tensors agree (-1 matches any size)', () => {
    expect(() => checkComposingModels(e, [model('a', 8, fp32('x'), fp32('y', '-1')), model('b', 4, fp32('x'), fp32('y'))])).not.toThrow();
  });

  it('names the step and map entry of an unknown or unfed tensor', () => {
    expectError(
      () => checkComposingModels(e, [model('a', 8, fp32('z'), fp32('y')), model('b', 4, fp32('x'), fp32('y'))]),
      "ensemble 'e': ensemble_scheduling.step[1] ('a') input_map 'x': model 'a' has no input 'x' (it has 'z')",
    );
    expectError(
      () => checkComposingModels(e, [model('a', 8, `${fp32('x')}, ${fp32('w')}`, fp32('y')), model('b', 4, fp32('x'), fp32('y'))]),
      "ensemble 'e': ensemble_scheduling.step[1] ('a') input_map does not feed input 'w' of model 'a'",
    );
    expectError(
      () => checkComposingModels(e, [model('a', 8, fp32('x'), fp32('q')), model('b', 4, fp32('x'), fp32('y'))]),
      "ensemble 'e': ensemble_scheduling.step[1] ('a') output_map 'y': model 'a' has no output 'y' (it has 'q')",
    );
  });

  it('names a datatype or shape mismatch between a step and what feeds it', () => {
    expectError(
      () => checkComposingModels(e, [model('a', 8, fp32('x'), fp32('y')), model('b', 4, '{ name: "x" data_type: TYPE_INT64 dims: [ 3 ] }', fp32('y'))]),
      "ensemble 'e': ensemble_scheduling.step[2] ('b') input_map 'x': ensemble tensor 'mid' has data type TYPE_INT64 as input 'x' of model 'b' (step[2]) but TYPE_FP32 as output 'y' of model 'a' (step[1])",
    );
    expectError(
      () => checkComposingModels(e, [model('a', 8, fp32('x', '5'), fp32('y')), model('b', 4, fp32('x'), fp32('y'))]),
      "ensemble 'e': ensemble_scheduling.step[1] ('a') input_map 'x': ensemble tensor 'IN' has shape [-1,5] as input 'x' of model 'a' (step[1]) but [-1,3] as ensemble input 'IN'",
    );
  });

  it("refuses an ensemble max_batch_size past a composing model's", () => {
    expectError(
      () => checkComposingModels(e, [model('a', 2, fp32('x'), fp32('y')), model('b', 4, fp32('x'), fp32('y'))]),
      "ensemble 'e': max_batch_size 4 is larger than 2, the max_batch_size of model 'a' in ensemble_scheduling.step[1] ('a'); an ensemble's max_batch_size must not exceed any composing model's",
    );
  });
});
