// A model coming or going is "changing" (requests for it are retryable, 503) from the moment a
// load or unload is asked for until it settled; a model that is not loaded and not changing is
// simply absent (404 on the OpenAI routes). The backend here holds its load and its close open
// until the test releases them, so every state can be looked at.
import { mkdtemp, mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ModelManager } from '../../../src/serving/model-manager.js';
import { ConveyorService } from '../../../src/serving/conveyor-service.js';
import type { BackendLoader, ServedModel } from '../../../src/serving/served-model.js';
import { missingModel } from '../../../src/server/kit/errors.js';

const CONFIG = 'name: "m"\nbackend: "onnxruntime"\nmax_batch_size: 0\ninput [ { name: "x" data_type: TYPE_FP32 dims: [ 1 ] } ]\noutput [ { name: "y" data_type: TYPE_FP32 dims: [ 1 ] } ]\n';

function gate(): { opened: Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

async function setUp() {
  const root = await mkdtemp(join(tmpdir(), 'conveyor-changes-'));
  await mkdir(join(root, 'm', '1'), { recursive: true });
  await writeFile(join(root, 'm', 'config.pbtxt'), CONFIG);
  const loading = gate();
  const closing = gate();
  const held: BackendLoader = async (request) => {
    await loading.opened;
    const served: ServedModel = {
      name: request.name,
      version: request.version,
      config: request.config,
      variant: { precision: 'fp32', model_file: 'model.onnx' },
      infer: () => Promise.reject(new Error('not used')),
      statistics: () => ({ name: request.name, version: String(request.version) }) as ReturnType<ServedModel['statistics']>,
      close: () => closing.opened,
    };
    return served;
  };
  const manager = new ModelManager({ root, mode: 'explicit', loaders: { onnxruntime: held }, log: () => {} });
  const service = new ConveyorService(manager, { mode: 'explicit', strictReadiness: false });
  return { manager, service, loading, closing };
}

describe('model changes', () => {
  it('is changing while loading and unloading, absent before and after', async () => {
    const { manager, service, loading, closing } = await setUp();
    expect(manager.isChanging('m')).toBe(false);
    expect(missingModel(service, 'm').code).toBe('NOT_FOUND');

    const loaded = manager.load('m');
    expect(manager.isChanging('m')).toBe(true);
    expect(missingModel(service, 'm').code).toBe('UNAVAILABLE');
    loading.open();
    await loaded;
    expect(manager.isChanging('m')).toBe(false);
    expect(service.modelReady('m')).toBe(true);

    const unloaded = manager.unload('m');
    expect(manager.isChanging('m')).toBe(true);
    // UNLOADING: KServe's resolve answers 503 too, not "unknown model".
    await Promise.resolve();
    expect(() => manager.resolve('m')).toThrow(expect.objectContaining({ code: 'UNAVAILABLE' }));
    expect(missingModel(service, 'm').code).toBe('UNAVAILABLE');
    closing.open();
    await unloaded;
    expect(manager.isChanging('m')).toBe(false);
    expect(missingModel(service, 'm').code).toBe('NOT_FOUND');
    expect(missingModel(service, 'never-existed').code).toBe('NOT_FOUND');
  });

  it('a failed load leaves the model not changing', async () => {
    const { manager } = await setUp();
    await expect(manager.load('missing')).rejects.toMatchObject({ code: 'INVALID_ARG' });
    expect(manager.isChanging('missing')).toBe(false);
  });

  it('while draining: not ready, every model request refused as retryable, liveness still true', async () => {
    const { manager, service, loading } = await setUp();
    loading.open();
    await manager.load('m');
    service.beginShutdown();
    expect(service.isReady()).toBe(false);
    expect(service.isLive()).toBe(true);
    expect(service.modelReady('m')).toBe(false);
    expect(() => service.llmModel('m')).toThrow(expect.objectContaining({ code: 'UNAVAILABLE', message: expect.stringMatching(/shutting down/) }));
    await expect(service.infer({ model: 'm', inputs: [] } as never)).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    expect(missingModel(service, 'anything').code).toBe('UNAVAILABLE');
  });
});
