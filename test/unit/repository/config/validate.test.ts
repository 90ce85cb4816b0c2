// Each validation rule, with the exact message and the position it points at.
import { describe, expect, it } from 'vitest';
import type { ModelConfig } from '../../../../src/contracts/model-config.js';
import { Locator } from '../../../../src/repository/config/locate.js';
import { validateModelConfig } from '../../../../src/repository/config/validate.js';
import { sameElementCount } from '../../../../src/repository/config/validate-tensors.js';
import { expectError, parseConfig as parse } from './helpers.js';

const ORT = 'backend: "onnxruntime"\n';
const TENSOR = 'input { name: "x" data_type: TYPE_FP32 dims: [ 4 ] }\n';
const fails = (text: string, message: string) => expectError(() => parse(text), `config.pbtxt:${message}`);

describe('model-level rules', () => {
  it('the name must match the directory when set', () => {
    expectError(() => parse(`name: "other"\n${ORT}`, 'm'), "config.pbtxt:1:1: model name 'other' does not match its directory name 'm'");
    expect(parse(ORT, 'dir-name').name).toBe('dir-name');
  });

  it('backend or platform must be set', () => {
    expectError(() => parse('name: "m"\nmax_batch_size: 1'), `config.pbtxt:1:1: the config sets neither 'backend' nor 'platform' (use backend: "onnxruntime" or backend: "llm")`);
    expectError(() => parse(''), `config.pbtxt:1:1: the config sets neither 'backend' nor 'platform' (use backend: "onnxruntime" or backend: "llm")`);
  });

  it('max_batch_size is not negative', () => {
    fails(`${ORT}max_batch_size: -1`, '2:1: max_batch_size must be >= 0, got -1');
  });

  it('version policies name real versions', () => {
    fails(`${ORT}version_policy { latest { num_versions: 0 } }`, '2:27: version_policy latest.num_versions must be >= 1');
    fails(`${ORT}version_policy { latest { } }`, '2:18: version_policy latest.num_versions must be >= 1');
    fails(`${ORT}version_policy { specific { } }`, '2:18: version_policy specific lists no versions');
    fails(`${ORT}version_policy { specific { versions: [ 2, 0 ] } }`, '2:44: version_policy specific version 0 is not a valid version (versions start at 1)');
  });

  it('decoupled is for LLMs, and excludes the response cache', () => {
    fails(`${ORT}model_transaction_policy {\n  decoupled: true\n}`, "3:3: model_transaction_policy decoupled is only supported for backends 'llm', 'typescript', 'javascript', not 'onnxruntime'");
    fails('backend: "llm"\nmodel_transaction_policy { decoupled: true }\nresponse_cache { enable: true }', '3:18: response_cache cannot be enabled for a decoupled model');
    expect(parse('backend: "llm"\nresponse_cache { enable: true }').response_cache).toEqual({ enable: true });
  });
});

describe('tensor rules', () => {
  it('names are required and unique per section', () => {
    fails(`${ORT}input { data_type: TYPE_FP32 dims: [ 1 ] }`, "2:7: input 0 must set 'name'");
    fails(`${ORT}input [\n  { name: "a" data_type: TYPE_FP32 dims: [ 1 ] },\n  { name: "a" data_type: TYPE_FP32 dims: [ 2 ] }\n]`, "4:5: input name 'a' is used more than once (first at 3:5)");
    fails(`${ORT}output { name: "a" data_type: TYPE_FP32 dims: [ 1 ] }\noutput { name: "a" data_type: TYPE_FP32 dims: [ 1 ] }`, "3:10: output name 'a' is used more than once (first at 2:10)");
    // An input and an output may share a name (Triton allows it).
    expect(parse(`${ORT}input { name: "a" data_type: TYPE_FP32 dims: [ 1 ] }\noutput { name: "a" data_type: TYPE_FP32 dims: [ 1 ] }`).output[0]!.name).toBe('a');
  });

  it('data_type and dims are required', () => {
    fails(`${ORT}input { name: "a" dims: [ 1 ] }`, "2:7: input 'a' must set 'data_type'");
    fails(`${ORT}input { name: "a" data_type: TYPE_INVALID dims: [ 1 ] }`, "2:19: input 'a' must set 'data_type'");
    fails(`${ORT}output { name: "a" data_type: TYPE_FP32 }`, "2:8: output 'a' must set 'dims' (rank >= 1; for a scalar use dims: [ 1 ] with reshape: { shape: [ ] })");
    fails(`${ORT}output { name: "a" data_type: TYPE_FP32 dims: [] }`, "2:41: output 'a' must set 'dims' (rank >= 1; for a scalar use dims: [ 1 ] with reshape: { shape: [ ] })");
  });

  it('dimensions are >= 1 or -1, in dims and reshape', () => {
    fails(`${ORT}input { name: "a" data_type: TYPE_FP32 dims: [ 3, 0 ] }`, "2:51: input 'a' dimension 0 is invalid: dimensions are integers >= 1, or -1 for a variable size");
    fails(`${ORT}input { name: "a" data_type: TYPE_FP32 dims: [ -2 ] }`, "2:48: input 'a' dimension -2 is invalid: dimensions are integers >= 1, or -1 for a variable size");
    fails(
      `${ORT}input { name: "a" data_type: TYPE_FP32 dims: [ 4 ] reshape { shape: [ 2, 0 ] } }`,
      "2:74: input 'a' reshape dimension 0 is invalid: dimensions are integers >= 1, or -1 for a variable size",
    );
  });

  it('reshape holds the same elements as dims', () => {
    fails(`${ORT}input { name: "a" data_type: TYPE_FP32 dims: [ 4 ] reshape { shape: [ 2, 3 ] } }`, "2:52: input 'a' reshape [2, 3] does not hold the same elements as dims [4]");
    fails(`${ORT}input { name: "a" data_type: TYPE_FP32 dims: [ 4, -1 ] reshape { shape: [ 4 ] } }`, "2:56: input 'a' reshape [4] does not hold the same elements as dims [4, -1]");
    expect(parse(`${ORT}max_batch_size: 2\ninput { name: "a" data_type: TYPE_FP32 dims: [ 1 ] reshape { shape: [ ] } }`).input[0]!.reshape).toEqual({ shape: [] });
  });

  it('sameElementCount compares fixed products between variable dimensions', () => {
    expect(sameElementCount([2, 3], [6])).toBe(true);
    expect(sameElementCount([2, -1, 3, 2], [1, 2, -1, 6])).toBe(true);
    expect(sameElementCount([2, -1], [-1, 2])).toBe(false);
    expect(sameElementCount([-1, -1], [-1])).toBe(false);
    expect(sameElementCount([1], [])).toBe(true);
  });

  it('image formats need three dims', () => {
    fails(
      `${ORT}input { name: "a" data_type: TYPE_FP32 format: FORMAT_NHWC dims: [ 224, 224 ] }`,
      "2:40: input 'a' has format FORMAT_NHWC, which needs 3 dims (without the batch dimension), got [224, 224]",
    );
  });

  it('label files stay inside the model directory', () => {
    fails(
      `${ORT}output { name: "a" data_type: TYPE_FP32 dims: [ 1 ] label_filename: "../secret" }`,
      "2:53: output 'a' label_filename '../secret' must stay inside the model directory (no '..' segments)",
    );
    fails(`${ORT}output { name: "a" data_type: TYPE_FP32 dims: [ 1 ] label_filename: "/etc/passwd" }`, "2:53: output 'a' label_filename must be relative to the model directory, not absolute");
    expect(parse(`${ORT}output { name: "a" data_type: TYPE_FP32 dims: [ 1 ] label_filename: "labels/a.txt" }`).output[0]!.label_filename).toBe('labels/a.txt');
  });
});

describe('instance group rules', () => {
  it('count is not negative', () => {
    fails(`${ORT}instance_group { name: "g" count: -1 }`, "2:28: instance group 'g' count must be >= 0 (0 means the default), got -1");
  });

  it('CPU and MODEL groups list no GPUs, and GPU ids are not negative', () => {
    fails(`${ORT}instance_group { kind: KIND_CPU gpus: [ 0 ] }`, "2:33: instance group 'm_0' has kind KIND_CPU but lists gpus [0]");
    fails(`${ORT}instance_group [ { }, { kind: KIND_MODEL gpus: 1 } ]`, "2:42: instance group 'm_1' has kind KIND_MODEL but lists gpus [1]");
    fails(`${ORT}instance_group { kind: KIND_GPU gpus: [ 0, -1 ] }`, "2:44: instance group 'm_0' lists gpu -1; gpu ids are >= 0");
  });

  it('group names are unique', () => {
    fails(`${ORT}instance_group [ { name: "g" }, { name: "g" } ]`, "2:35: instance group name 'g' is used by more than one group");
  });
});

describe('dynamic batching rules', () => {
  const BATCHING = `${ORT}max_batch_size: 8\n`;

  it('preferred sizes are positive and at most max_batch_size', () => {
    fails(`${BATCHING}dynamic_batching { preferred_batch_size: [ 4, 0 ] }`, '3:47: dynamic_batching preferred_batch_size must be > 0, got 0');
    fails(`${BATCHING}dynamic_batching { preferred_batch_size: [ 16 ] }`, '3:44: dynamic_batching preferred_batch_size 16 is larger than max_batch_size 8');
    fails(`${ORT}dynamic_batching { preferred_batch_size: 2 }`, '2:42: dynamic_batching preferred_batch_size 2 is larger than max_batch_size 0 (a model with max_batch_size 0 does not batch)');
  });

  it('the default priority level lies within the levels', () => {
    fails(`${BATCHING}dynamic_batching {\n  priority_levels: 3\n  default_priority_level: 4\n}`, '5:3: dynamic_batching default_priority_level must be between 1 and priority_levels (3), got 4');
    fails(`${BATCHING}dynamic_batching {\n  priority_levels: 3\n}`, '4:3: dynamic_batching default_priority_level must be between 1 and priority_levels (3), got 0');
    fails(`${BATCHING}dynamic_batching { default_priority_level: 2 }`, '3:20: dynamic_batching default_priority_level 2 needs priority_levels >= 2, but priority_levels is 0');
  });

  it('priority queue policies are keyed by existing levels', () => {
    const levels = `${BATCHING}dynamic_batching {\n  priority_levels: 2 default_priority_level: 1\n`;
    fails(`${levels}  priority_queue_policy { key: 3 value { } }\n}`, '5:25: dynamic_batching priority_queue_policy key 3 is not a priority level (levels are 1 to 2)');
    fails(`${levels}  priority_queue_policy [ { key: 1 value {} }, { key: 0 value {} } ]\n}`, '5:48: dynamic_batching priority_queue_policy key 0 is not a priority level (levels are 1 to 2)');
    fails(`${BATCHING}dynamic_batching { priority_queue_policy { key: 1 value { } } }`, '3:42: dynamic_batching priority_queue_policy key 1 is not a priority level (priority_levels is 0)');
  });

  it('preserve_ordering allows one level and no DELAY with a timeout', () => {
    fails(
      `${BATCHING}dynamic_batching { preserve_ordering: true priority_levels: 2 default_priority_level: 1 }`,
      '3:20: dynamic_batching preserve_ordering allows at most one priority level, got priority_levels 2',
    );
    fails(
      `${BATCHING}dynamic_batching { preserve_ordering: true\n  default_queue_policy { timeout_action: DELAY default_timeout_microseconds: 10 } }`,
      '4:26: dynamic_batching default_queue_policy cannot use timeout_action DELAY with a timeout when preserve_ordering is true',
    );
    fails(
      `${BATCHING}dynamic_batching { preserve_ordering: true priority_levels: 1 default_priority_level: 1\n  priority_queue_policy { key: 1 value { timeout_action: DELAY default_timeout_microseconds: 10 } } }`,
      '4:42: dynamic_batching priority_queue_policy 1 cannot use timeout_action DELAY with a timeout when preserve_ordering is true',
    );
    const ok = parse(`${BATCHING}dynamic_batching { preserve_ordering: true default_queue_policy { timeout_action: DELAY } }`);
    expect(ok.dynamic_batching!.preserve_ordering).toBe(true);
  });
});

describe('warmup rules', () => {
  const WARM = `${ORT}max_batch_size: 4\n${TENSOR}`;
  const sample = 'inputs { key: "x" value { data_type: TYPE_FP32 dims: [ 4 ] zero_data: true } }';

  it('names are required and unique', () => {
    fails(`${WARM}model_warmup { batch_size: 1 ${sample} }`, "4:14: model_warmup 0 must set 'name'");
    fails(`${WARM}model_warmup [ { name: "w" batch_size: 1 ${sample} }, { name: "w" batch_size: 1 ${sample} } ]`, "4:126: model_warmup name 'w' is used more than once");
  });

  it('batch_size is between 1 and max_batch_size (1 without batching)', () => {
    fails(`${WARM}model_warmup { name: "w" ${sample} }`, "4:14: model_warmup 'w' batch_size must be between 1 and max_batch_size (4), got 0");
    fails(`${WARM}model_warmup { name: "w" batch_size: 5 ${sample} }`, "4:26: model_warmup 'w' batch_size must be between 1 and max_batch_size (4), got 5");
    fails(`${ORT}${TENSOR}model_warmup { name: "w" batch_size: 2 ${sample} }`, "3:26: model_warmup 'w' batch_size must be 1 for a model with max_batch_size 0, got 2");
  });

  it('inputs are model inputs with a data source, and required inputs are given', () => {
    fails(
      `${WARM}model_warmup { name: "w" batch_size: 1 ${sample} inputs { key: "z" value { data_type: TYPE_FP32 zero_data: true } } }`,
      "4:126: model_warmup 'w' input 'z' is not an input of the model",
    );
    fails(
      `${WARM}model_warmup { name: "w" batch_size: 1 inputs { key: "x" value { data_type: TYPE_FP32 dims: [ 4 ] } } }`,
      "4:47: model_warmup 'w' input 'x' must set zero_data, random_data or input_data_file",
    );
    fails(`${WARM}model_warmup { name: "w" batch_size: 1 inputs { key: "x" value { zero_data: true } } }`, "4:47: model_warmup 'w' input 'x' must set 'data_type'");
    fails(
      `${WARM}model_warmup { name: "w" batch_size: 1 inputs { key: "x" value { data_type: TYPE_FP32 input_data_file: "../x" } } }`,
      "4:87: model_warmup 'w' input 'x' input_data_file '../x' must stay inside the model directory (no '..' segments)",
    );
    fails(`${WARM}model_warmup { name: "w" batch_size: 1 }`, "4:14: model_warmup 'w' does not give required input 'x'");
  });
});

describe('validateModelConfig without source positions', () => {
  it('labels messages with the locator label only', () => {
    const config = parse(`${ORT}max_batch_size: 4`);
    const changed: ModelConfig = { ...config, max_batch_size: -3 };
    expectError(() => validateModelConfig(changed, new Locator("model 'm'")), "model 'm': max_batch_size must be >= 0, got -3");
  });
});
