// Reading Hugging Face safetensors checkpoints: an 8-byte little-endian header length, a JSON
// header ({name: {dtype, shape, data_offsets}}, plus "__metadata__"), then the raw tensor bytes.
// Tensors are read one at a time through a file handle at their offsets, so a converter holds
// one raw tensor at a time, never a whole shard. Sharded checkpoints list their shards in
// model.safetensors.index.json ({"weight_map": {name: file}}).

import { closeSync, existsSync, openSync, readSync } from 'node:fs';
import { open, readFile, stat, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { float16BitsToFloat32 } from '../../kernels/onnx/dtypes.js';

/** The dtypes a converter accepts; other checkpoint dtypes (int, fp8) are refused by name. */
export const SAFETENSORS_FLOAT_DTYPES = ['F32', 'F16', 'BF16'] as const;
export type SafetensorsDtype = (typeof SAFETENSORS_FLOAT_DTYPES)[number];
const BYTES_PER_ELEMENT: Record<SafetensorsDtype, number> = { F32: 4, F16: 2, BF16: 2 };

export class CheckpointError extends Error {}

export interface TensorEntry {
  readonly dtype: SafetensorsDtype;
  readonly shape: readonly number[];
  /** Byte range in the file, absolute (header already added). */
  readonly begin: number;
  readonly end: number;
}

export interface SafetensorsHeader {
  readonly tensors: ReadonlyMap<string, TensorEntry>;
  readonly metadata: Readonly<Record<string, string>>;
}

const MAX_HEADER_BYTES = 100 * 1024 * 1024;

/** Parses a header's JSON (the bytes after the length prefix) and checks every entry against the file size. */
export function parseSafetensorsHeader(json: string, headerBytes: number, fileBytes: number, file = 'checkpoint'): SafetensorsHeader {
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch (error) {
    throw new CheckpointError(`${file}: safetensors header is not JSON (${(error as Error).message})`);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new CheckpointError(`${file}: safetensors header is not a JSON object`);
  const dataStart = 8 + headerBytes;
  const tensors = new Map<string, TensorEntry>();
  let metadata: Record<string, string> = {};
  for (const [name, value] of Object.entries(raw as Record<string, unknown>)) {
    if (name === '__metadata__') {
      metadata = value as Record<string, string>;
      continue;
    }
    const { dtype, shape, data_offsets: offsets } = (value ?? {}) as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
    if (!SAFETENSORS_FLOAT_DTYPES.includes(dtype as SafetensorsDtype)) {
      throw new CheckpointError(`${file}: tensor ${name} has dtype ${String(dtype)}; the converter reads ${SAFETENSORS_FLOAT_DTYPES.join(', ')}`);
    }
    if (!Array.isArray(shape) || !shape.every((d) => Number.isInteger(d) && d >= 0)) throw new CheckpointError(`${file}: tensor ${name} has a bad shape`);
    if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every((o) => Number.isInteger(o) && o >= 0)) {
      throw new CheckpointError(`${file}: tensor ${name} has bad data_offsets`);
    }
    const [from, to] = offsets as [number, number];
    const expected = (shape as number[]).reduce((a, b) => a * b, 1) * BYTES_PER_ELEMENT[dtype as SafetensorsDtype];
    if (to - from !== expected) throw new CheckpointError(`${file}: tensor ${name} spans ${to - from} bytes, its shape and dtype need ${expected}`);
    if (dataStart + to > fileBytes) throw new CheckpointError(`${file}: tensor ${name} ends at byte ${dataStart + to}, past the end of the file (${fileBytes} bytes): truncated?`);
    tensors.set(name, { dtype: dtype as SafetensorsDtype, shape: shape as number[], begin: dataStart + from, end: dataStart + to });
  }
  return { tensors, metadata };
}

/** Raw little-endian tensor bytes → float32 values (bf16 is the top half of an f32). */
export function decodeToFloat32(dtype: SafetensorsDtype, bytes: Uint8Array): Float32Array {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const count = bytes.byteLength / BYTES_PER_ELEMENT[dtype];
  const out = new Float32Array(count);
  if (dtype === 'F32') for (let i = 0; i < count; i++) out[i] = view.getFloat32(i * 4, true);
  else if (dtype === 'F16') for (let i = 0; i < count; i++) out[i] = float16BitsToFloat32(view.getUint16(i * 2, true));
  else {
    const word = new DataView(new ArrayBuffer(4));
    for (let i = 0; i < count; i++) {
      word.setUint32(0, view.getUint16(i * 2, true) << 16);
      out[i] = word.getFloat32(0);
    }
  }
  return out;
}

interface Shard {
  readonly path: string;
  readonly header: SafetensorsHeader;
}

/** One checkpoint (one file or several shards) with tensors read on demand. */
export class SafetensorsCheckpoint {
  private constructor(
    private readonly shards: ReadonlyMap<string, Shard>,
    private readonly owner: ReadonlyMap<string, string>,
  ) {}

  /** Opens `dir/model.safetensors.index.json` when present, else `dir/model.safetensors`. */
  static async open(dir: string): Promise<SafetensorsCheckpoint> {
    const index = join(dir, 'model.safetensors.index.json');
    let files: string[];
    const owner = new Map<string, string>();
    if (existsSync(index)) {
      const parsed = JSON.parse(await readFile(index, 'utf8')) as { weight_map?: Record<string, string> };
      if (!parsed.weight_map) throw new CheckpointError(`${index}: no weight_map`);
      for (const [name, file] of Object.entries(parsed.weight_map)) owner.set(name, file);
      files = [...new Set(owner.values())];
    } else if (existsSync(join(dir, 'model.safetensors'))) {
      files = ['model.safetensors'];
    } else {
      throw new CheckpointError(`${dir}: no model.safetensors or model.safetensors.index.json`);
    }
    const shards = new Map<string, Shard>();
    for (const file of files) {
      const path = join(dir, file);
      if (!existsSync(path)) throw new CheckpointError(`${path}: shard listed in the index is missing`);
      const header = await readHeader(path);
      shards.set(file, { path, header });
      if (files.length === 1 && owner.size === 0) for (const name of header.tensors.keys()) owner.set(name, file);
    }
    return new SafetensorsCheckpoint(shards, owner);
  }

  has(name: string): boolean {
    return this.entry(name) !== undefined;
  }

  names(): string[] {
    return [...this.owner.keys()];
  }

  entry(name: string): TensorEntry | undefined {
    const file = this.owner.get(name);
    return file === undefined ? undefined : this.shards.get(file)?.header.tensors.get(name);
  }

  /**
   * Reads one tensor as float32 (its shape checked when `shape` is given). Synchronous on purpose:
   * the graph builder asks for weights as it reaches them, so each is read, written out and dropped.
   */
  read(name: string, shape?: readonly number[]): Float32Array {
    const file = this.owner.get(name);
    const shard = file === undefined ? undefined : this.shards.get(file);
    const entry = shard?.header.tensors.get(name);
    if (!shard || !entry) throw new CheckpointError(`checkpoint has no tensor ${name}`);
    if (shape && shape.join(',') !== entry.shape.join(',')) throw new CheckpointError(`tensor ${name} has shape [${entry.shape.join(', ')}], the config needs [${shape.join(', ')}]`);
    const fd = openSync(shard.path, 'r');
    try {
      const bytes = new Uint8Array(entry.end - entry.begin);
      for (let done = 0; done < bytes.byteLength; ) {
        const read = readSync(fd, bytes, done, bytes.byteLength - done, entry.begin + done);
        if (read === 0) throw new CheckpointError(`${shard.path}: ended after ${entry.begin + done} bytes: truncated?`);
        done += read;
      }
      return decodeToFloat32(entry.dtype, bytes);
    } finally {
      closeSync(fd);
    }
  }
}

async function readHeader(path: string): Promise<SafetensorsHeader> {
  const fileBytes = (await stat(path)).size;
  const handle = await open(path, 'r');
  try {
    if (fileBytes < 8) throw new CheckpointError(`${path}: ${fileBytes} bytes, too short for a safetensors file: truncated?`);
    const lengthBytes = await readExactly(handle, 0, 8, path);
    const headerBytes = Number(new DataView(lengthBytes.buffer, lengthBytes.byteOffset, 8).getBigUint64(0, true));
    if (headerBytes > MAX_HEADER_BYTES || 8 + headerBytes > fileBytes) {
      throw new CheckpointError(`${path}: header length ${headerBytes} does not fit the file (${fileBytes} bytes): truncated or not safetensors?`);
    }
    const json = new TextDecoder().decode(await readExactly(handle, 8, headerBytes, path));
    return parseSafetensorsHeader(json, headerBytes, fileBytes, path);
  } finally {
    await handle.close();
  }
}

async function readExactly(handle: FileHandle, position: number, length: number, path: string): Promise<Uint8Array> {
  const buffer = new Uint8Array(length);
  let done = 0;
  while (done < length) {
    const { bytesRead } = await handle.read(buffer, done, length - done, position + done);
    if (bytesRead === 0) throw new CheckpointError(`${path}: ended after ${position + done} bytes: truncated?`);
    done += bytesRead;
  }
  return buffer;
}
