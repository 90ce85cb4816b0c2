// The metadata_props of an ONNX model file (ModelProto field 14: key / value strings), which
// onnxruntime-node does not expose. Read by walking the file's top-level protobuf fields and
// seeking past the rest (the graph, its weights), so a large model costs a few small reads.

import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { stringEntry, varint as varintIn } from './protobuf-reader.js';

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
    const { value, next } = varintIn(head.subarray(0, read), 0);
    return { value, next: at + next };
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
