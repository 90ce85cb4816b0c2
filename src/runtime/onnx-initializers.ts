// The float32 initializers (weights) of an ONNX model file, by name, read from the file itself and
// its external data: onnxruntime-node does not expose a session's weights, and the native layer
// ops (src/runners/native-layers.ts) pack their own copy of a segment's projections. Walks
// ModelProto.graph (7) → GraphProto.initializer (5) → TensorProto: dims (1), data_type (2),
// float_data (4), name (8), raw_data (9), external_data (13: location / offset / length),
// data_location (14).

import { closeSync, openSync, readFileSync, readSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { fields, packedVarints, stringEntry, text } from './protobuf-reader.js';

const GRAPH = 7;
const INITIALIZER = 5;
const FLOAT = 1;

interface TensorEntry {
  name: string;
  dims: number[];
  dataType: number;
  /** Where raw_data / float_data lie in the model file's bytes. */
  inline?: { start: number; end: number };
  external?: { location: string; offset: number; length: number };
}

function tensorEntry(bytes: Uint8Array, start: number, end: number): TensorEntry {
  const entry: TensorEntry = { name: '', dims: [], dataType: 0 };
  const external: Record<string, string> = {};
  for (const f of fields(bytes, start, end)) {
    if (f.field === 1 && f.wire === 0) entry.dims.push(f.value);
    else if (f.field === 1 && f.wire === 2) entry.dims.push(...packedVarints(bytes, f));
    else if (f.field === 2) entry.dataType = f.value;
    else if (f.field === 8) entry.name = text(bytes, f);
    else if ((f.field === 9 || f.field === 4) && f.wire === 2) entry.inline = { start: f.start, end: f.end };
    else if (f.field === 13) {
      // One StringStringEntryProto per occurrence: location, offset, length.
      const { key, value } = stringEntry(bytes, f.start, f.end);
      if (key !== undefined) external[key] = value ?? '';
    }
  }
  if ('location' in external) entry.external = { location: external['location']!, offset: Number(external['offset'] ?? 0), length: Number(external['length'] ?? 0) };
  return entry;
}

/** The named float32 initializers of `modelPath` (those present; others are simply absent from the map), each a fresh Float32Array. */
export function readFloatInitializers(modelPath: string, names: ReadonlySet<string>): Map<string, { dims: number[]; data: Float32Array }> {
  const bytes = readFileSync(modelPath);
  const found = new Map<string, { dims: number[]; data: Float32Array }>();
  for (const graph of fields(bytes, 0, bytes.length)) {
    if (graph.field !== GRAPH || graph.wire !== 2) continue;
    for (const f of fields(bytes, graph.start, graph.end)) {
      if (f.field !== INITIALIZER || f.wire !== 2) continue;
      const entry = tensorEntry(bytes, f.start, f.end);
      if (!names.has(entry.name) || entry.dataType !== FLOAT) continue;
      const data = entry.external
        ? readExternal(modelPath, entry.external)
        : entry.inline && new Float32Array(bytes.buffer.slice(bytes.byteOffset + entry.inline.start, bytes.byteOffset + entry.inline.end));
      const count = entry.dims.reduce((product, dim) => product * dim, 1);
      if (!data || data.length !== count) throw new Error(`${modelPath}: initializer ${entry.name} holds ${data?.length ?? 0} floats, its dims ${entry.dims.join('×')}`);
      found.set(entry.name, { dims: entry.dims, data });
    }
  }
  return found;
}

function readExternal(modelPath: string, { location, offset, length }: { location: string; offset: number; length: number }): Float32Array {
  // External data lies beside the model, never above it (ONNX's own rule).
  const relative = normalize(location);
  if (relative.startsWith('..') || relative.startsWith('/')) throw new Error(`${modelPath}: external data location ${location} leaves the model's directory`);
  const data = new Float32Array(length / 4);
  const fd = openSync(join(dirname(modelPath), relative), 'r');
  try {
    const read = readSync(fd, new Uint8Array(data.buffer), 0, length, offset);
    if (read !== length) throw new Error(`${modelPath}: external data ${location} ends before ${offset + length}`);
  } finally {
    closeSync(fd);
  }
  return data;
}
