// The committed config.pbtxt files and the built weights must describe the same models.
import * as ort from 'onnxruntime-node';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_MODELS, DEFAULT_REPOSITORY } from '../../../models/default-repository.js';

/** The tensors a config lists: name, and dims (-1 variable), from its input/output blocks. */
function configTensors(config: string, section: 'input' | 'output'): { name: string; dims: number[] }[] {
  const block = new RegExp(`^${section} \\[([\\s\\S]*?)^\\]`, 'm').exec(config)?.[1] ?? '';
  return [...block.matchAll(/name:\s*"([^"]+)"[\s\S]*?dims:\s*\[([^\]]*)\]/g)].map((m) => ({
    name: m[1]!,
    dims: m[2]!.split(',').map((d) => Number(d.trim())),
  }));
}

describe('default model repository', () => {
  it.each(DEFAULT_MODELS.map((m) => [m.name, m.family] as const))('%s has a config and built version 1', (name) => {
    const config = readFileSync(join(DEFAULT_REPOSITORY, name, 'config.pbtxt'), 'utf8');
    expect(config).toContain(`name: "${name}"`);
    expect(existsSync(join(DEFAULT_REPOSITORY, name, '1', 'conveyor-build.json'))).toBe(true);
  });

  it.each(['bert-tiny', 'resnet-tiny'])('%s config matches every variant of the ONNX model', async (name) => {
    const config = readFileSync(join(DEFAULT_REPOSITORY, name, 'config.pbtxt'), 'utf8');
    const maxBatch = Number(/max_batch_size:\s*(\d+)/.exec(config)![1]);
    for (const file of ['model.onnx', 'model_fp16.onnx', 'model_quantized.onnx']) {
      const session = await ort.InferenceSession.create(join(DEFAULT_REPOSITORY, name, '1', file));
      for (const [section, metadata] of [
        ['input', session.inputMetadata],
        ['output', session.outputMetadata],
      ] as const) {
        const declared = configTensors(config, section);
        expect(declared.map((t) => t.name)).toEqual(metadata.map((m) => m.name));
        declared.forEach((tensor, i) => {
          const shape = (metadata[i] as unknown as { shape: (number | string)[]; type: string }).shape;
          const modelDims = (maxBatch > 0 ? shape.slice(1) : shape).map((d) => (typeof d === 'number' ? d : -1));
          expect(modelDims, `${file} ${tensor.name}`).toEqual(tensor.dims);
          expect((metadata[i] as unknown as { type: string }).type).not.toBe('float16');
        });
      }
      await session.release();
    }
  });

  it('puts resnet-tiny labels where Triton looks for label_filename', () => {
    const labels = readFileSync(join(DEFAULT_REPOSITORY, 'resnet-tiny', 'labels.txt'), 'utf8')
      .trimEnd()
      .split('\n');
    expect(labels).toHaveLength(1000);
    expect(new Set(labels).size).toBe(1000);
  });
});
