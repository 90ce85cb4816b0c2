import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CheckpointError, SafetensorsCheckpoint, decodeToFloat32, parseSafetensorsHeader } from '../../../../models/convert/safetensors.js';
import { encodeFromFloat32, encodeSafetensors, writeSafetensorsCheckpoint } from '../../../../models/convert/safetensors-writer.js';

const tensors = [
  { name: 'a', shape: [2, 3], values: Float32Array.of(1, -2, 3.5, 0, 1e-3, -65504) },
  { name: 'b', shape: [4], values: Float32Array.of(0.1, 0.2, 0.3, 0.4) },
];

describe('safetensors header', () => {
  it('turns data_offsets into absolute byte ranges and keeps __metadata__', () => {
    const json = JSON.stringify({ __metadata__: { format: 'pt' }, w: { dtype: 'BF16', shape: [2, 2], data_offsets: [16, 24] }, v: { dtype: 'F32', shape: [4], data_offsets: [0, 16] } });
    const header = parseSafetensorsHeader(json, 100, 8 + 100 + 24);
    expect(header.metadata).toEqual({ format: 'pt' });
    expect(header.tensors.get('w')).toEqual({ dtype: 'BF16', shape: [2, 2], begin: 124, end: 132 });
    expect(header.tensors.get('v')).toEqual({ dtype: 'F32', shape: [4], begin: 108, end: 124 });
  });

  it('refuses bad entries by name', () => {
    const parse =
      (entry: unknown, fileBytes = 1000) =>
      () =>
        parseSafetensorsHeader(JSON.stringify({ t: entry }), 10, fileBytes, 'x.safetensors');
    expect(parse({ dtype: 'I64', shape: [1], data_offsets: [0, 8] })).toThrow(/tensor t has dtype I64/);
    expect(parse({ dtype: 'F32', shape: [3], data_offsets: [0, 8] })).toThrow(/tensor t spans 8 bytes, its shape and dtype need 12/);
    expect(parse({ dtype: 'F32', shape: [2], data_offsets: [0, 8] }, 20)).toThrow(/past the end of the file.*truncated/);
    expect(() => parseSafetensorsHeader('{not json', 9, 100)).toThrow(CheckpointError);
  });
});

describe('dtype decoding', () => {
  it('bf16 is the top 16 bits of an f32', () => {
    // 1.0 = 0x3f80, -2.0 = 0xc000, 0.15625 = 0x3e20
    const bytes = Uint8Array.of(0x80, 0x3f, 0x00, 0xc0, 0x20, 0x3e);
    expect(Array.from(decodeToFloat32('BF16', bytes))).toEqual([1, -2, 0.15625]);
  });

  it('f16 and f32 decode little-endian', () => {
    expect(Array.from(decodeToFloat32('F16', Uint8Array.of(0x00, 0x3c, 0x00, 0xc4)))).toEqual([1, -4]);
    expect(Array.from(decodeToFloat32('F32', new Uint8Array(Float32Array.of(2.5, -1).buffer)))).toEqual([2.5, -1]);
  });

  it('encoding to bf16 rounds to nearest even and decodes back', () => {
    const values = Float32Array.of(1 + 2 ** -8, 1 + 3 * 2 ** -8, -2.71875, -0.001);
    const back = decodeToFloat32('BF16', encodeFromFloat32('BF16', values));
    expect(back[0]).toBe(1); // a tie rounds to the even mantissa
    expect(back[1]).toBe(1 + 2 ** -6);
    for (let i = 0; i < values.length; i++) expect(Math.abs(back[i]! - values[i]!)).toBeLessThanOrEqual(Math.abs(values[i]!) * 2 ** -8);
  });
});

describe('SafetensorsCheckpoint', () => {
  it('reads tensors back from one file, header padded to 8 bytes', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'st-'));
    await writeSafetensorsCheckpoint(dir, tensors);
    const bytes = await readFile(join(dir, 'model.safetensors'));
    expect(Number(bytes.readBigUInt64LE(0)) % 8).toBe(0);
    const checkpoint = await SafetensorsCheckpoint.open(dir);
    expect(checkpoint.names()).toEqual(['a', 'b']);
    expect(checkpoint.read('a', [2, 3])).toEqual(tensors[0]!.values);
    expect(checkpoint.read('b')).toEqual(tensors[1]!.values);
    expect(() => checkpoint.read('a', [3, 2])).toThrow(/tensor a has shape \[2, 3\], the config needs \[3, 2\]/);
    expect(() => checkpoint.read('c')).toThrow(/no tensor c/);
  });

  it('reads a sharded checkpoint through model.safetensors.index.json', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'st-'));
    await writeSafetensorsCheckpoint(dir, tensors, { shards: 2, dtype: 'F16' });
    const index = JSON.parse(await readFile(join(dir, 'model.safetensors.index.json'), 'utf8')) as { weight_map: Record<string, string> };
    expect(index.weight_map).toEqual({ a: 'model-00001-of-00002.safetensors', b: 'model-00002-of-00002.safetensors' });
    const checkpoint = await SafetensorsCheckpoint.open(dir);
    expect(checkpoint.entry('b')?.dtype).toBe('F16');
    const b = checkpoint.read('b');
    for (let i = 0; i < 4; i++) expect(b[i]).toBeCloseTo(tensors[1]!.values[i]!, 3);
  });

  it('a truncated file is named as truncated', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'st-'));
    const bytes = encodeSafetensors(tensors, 'F32');
    await writeFile(join(dir, 'model.safetensors'), bytes.subarray(0, bytes.byteLength - 4));
    await expect(SafetensorsCheckpoint.open(dir)).rejects.toThrow(/tensor b ends at byte \d+, past the end of the file .*truncated/);
    await writeFile(join(dir, 'model.safetensors'), bytes.subarray(0, 20));
    await expect(SafetensorsCheckpoint.open(dir)).rejects.toThrow(/header length \d+ does not fit the file \(20 bytes\)/);
  });

  it('a directory without safetensors says so', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'st-'));
    await expect(SafetensorsCheckpoint.open(dir)).rejects.toThrow(/no model.safetensors or model.safetensors.index.json/);
  });
});
