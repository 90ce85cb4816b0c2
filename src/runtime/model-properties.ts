// The metadata_props of an ONNX model file (ModelProto field 14: key / value strings), which
// onnxruntime-node does not expose. Read by walking the file's top-level protobuf fields and
// seeking past the rest (the graph, its weights), so a large model costs a few small reads.

import { closeSync, fstatSync, openSync, readSync } from 'node:fs';

const METADATA_PROPS = 14;

/** The model's metadata_props, key → value; {} where the file cannot be read as a model. */
export function readModelProperties(path: string): Record<string, string> {
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    return propertiesOf(fd, fstatSync(fd).size);
  } catch {
    return {};
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

function propertiesOf(fd: number, size: number): Record<string, string> {
  const properties: Record<string, string> = {};
  const head = Buffer.alloc(20);
  const varint = (at: number): { value: number; next: number } => {
    const read = readSync(fd, head, 0, head.length, at);
    let value = 0;
    for (let i = 0, scale = 1; i < read; i++, scale *= 128) {
      value += (head[i]! & 0x7f) * scale;
      if (head[i]! < 0x80) return { value, next: at + i + 1 };
    }
    throw new Error('truncated varint');
  };
  for (let at = 0; at < size; ) {
    const tag = varint(at);
    const [field, wire] = [Math.floor(tag.value / 8), tag.value % 8];
    at = tag.next;
    if (wire === 0) at = varint(at).next;
    else if (wire === 1) at += 8;
    else if (wire === 5) at += 4;
    else if (wire === 2) {
      const length = varint(at);
      at = length.next;
      if (field === METADATA_PROPS) {
        const entry = Buffer.alloc(length.value);
        readSync(fd, entry, 0, length.value, at);
        const { key, value } = stringEntry(entry);
        if (key !== undefined) properties[key] = value ?? '';
      }
      at += length.value;
    } else throw new Error(`wire type ${wire} at the top level`);
  }
  return properties;
}

/** StringStringEntryProto: key (1), value (2). */
function stringEntry(bytes: Buffer): { key?: string; value?: string } {
  const entry: { key?: string; value?: string } = {};
  for (let at = 0; at < bytes.length; ) {
    const tag = bytes[at++]!;
    let length = 0;
    for (let scale = 1; ; scale *= 128) {
      const byte = bytes[at++]!;
      length += (byte & 0x7f) * scale;
      if (byte < 0x80) break;
    }
    const text = bytes.toString('utf8', at, at + length);
    if (tag === 0x0a) entry.key = text;
    else if (tag === 0x12) entry.value = text;
    at += length;
  }
  return entry;
}
