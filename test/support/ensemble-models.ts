// Tiny ONNX models for ensemble tests, built in code (kernels/onnx/graph-builder) into a test
// repository: each takes a batch of FP32 rows of `width` and computes one thing, so a test can
// compute the same answer itself. They batch (max_batch_size 8) behind a dynamic batcher whose
// delay is long enough that concurrent requests meet in one execution.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { GraphBuilder } from '../../kernels/onnx/graph-builder.js';

export type RowOp = 'l2norm' | 'double' | 'increment';

function graphOf(op: RowOp, width: number): Uint8Array {
  const g = new GraphBuilder(op);
  const x = g.input('x', 'float32', ['batch', width]);
  let y: string;
  if (op === 'double') y = g.op1('Mul', [x, g.floats(2)]);
  else if (op === 'increment') y = g.op1('Add', [x, g.floats(1)]);
  else y = g.op1('Div', [x, g.op1('Sqrt', [g.op1('ReduceSum', [g.op1('Mul', [x, x]), g.ints([1])], { keepdims: 1 })])]);
  g.output(y, 'y', 'float32', ['batch', width]);
  return g.toModel().toBytes();
}

/** Writes model `name` (input "x", output "y", FP32 [width]) computing `op` per row into `root`. */
export async function addRowModel(root: string, name: string, op: RowOp, width: number, queueDelayUs = 20_000): Promise<void> {
  const dir = join(root, name);
  await mkdir(join(dir, '1'), { recursive: true });
  await writeFile(join(dir, '1', 'model.onnx'), graphOf(op, width));
  await writeFile(
    join(dir, 'config.pbtxt'),
    `name: "${name}"
backend: "onnxruntime"
max_batch_size: 8
input [ { name: "x" data_type: TYPE_FP32 dims: [ ${width} ] } ]
output [ { name: "y" data_type: TYPE_FP32 dims: [ ${width} ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
dynamic_batching { max_queue_delay_microseconds: ${queueDelayUs} }
`,
  );
}

/** Writes an ensemble's config.pbtxt and its empty version directory (Triton requires one). */
export async function addEnsemble(root: string, name: string, config: string): Promise<void> {
  await mkdir(join(root, name, '1'), { recursive: true });
  await writeFile(join(root, name, 'config.pbtxt'), config);
}
