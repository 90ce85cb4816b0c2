// A minimal protobuf wire-format writer. It keeps large payloads (weights) as references to
// their typed arrays, so a 400 MB model is serialised without copying the weights twice.

const WIRE_VARINT = 0;
const WIRE_FIXED32 = 5;
const WIRE_LENGTH_DELIMITED = 2;

/** An encoded message as a list of byte chunks; `byteLength` is their total. */
export class EncodedMessage {
  readonly chunks: Uint8Array[] = [];
  byteLength = 0;

  private push(bytes: Uint8Array): void {
    if (bytes.byteLength === 0) return;
    this.chunks.push(bytes);
    this.byteLength += bytes.byteLength;
  }

  private varint(value: bigint | number): void {
    let v = BigInt.asUintN(64, BigInt(value));
    const out: number[] = [];
    while (v >= 0x80n) {
      out.push(Number(v & 0x7fn) | 0x80);
      v >>= 7n;
    }
    out.push(Number(v));
    this.push(Uint8Array.from(out));
  }

  private tag(field: number, wire: number): void {
    this.varint((field << 3) | wire);
  }

  int(field: number, value: number | bigint): this {
    this.tag(field, WIRE_VARINT);
    this.varint(value);
    return this;
  }

  float(field: number, value: number): this {
    this.tag(field, WIRE_FIXED32);
    const bytes = new Uint8Array(4);
    new DataView(bytes.buffer).setFloat32(0, value, true);
    this.push(bytes);
    return this;
  }

  string(field: number, value: string): this {
    return this.bytes(field, new TextEncoder().encode(value));
  }

  bytes(field: number, value: Uint8Array): this {
    this.tag(field, WIRE_LENGTH_DELIMITED);
    this.varint(value.byteLength);
    this.push(value);
    return this;
  }

  message(field: number, child: EncodedMessage): this {
    this.tag(field, WIRE_LENGTH_DELIMITED);
    this.varint(child.byteLength);
    for (const chunk of child.chunks) this.push(chunk);
    return this;
  }

  /** Repeated int64/int32 as one packed field (proto3's default encoding). */
  packedInts(field: number, values: readonly (number | bigint)[]): this {
    if (values.length === 0) return this;
    const packed = new EncodedMessage();
    for (const v of values) packed.varint(v);
    return this.message(field, packed);
  }

  packedFloats(field: number, values: readonly number[]): this {
    if (values.length === 0) return this;
    const bytes = new Uint8Array(values.length * 4);
    const view = new DataView(bytes.buffer);
    values.forEach((v, i) => view.setFloat32(i * 4, v, true));
    return this.bytes(field, bytes);
  }

  toBytes(): Uint8Array {
    const out = new Uint8Array(this.byteLength);
    let offset = 0;
    for (const chunk of this.chunks) {
      out.set(chunk, offset);
      offset += chunk.byteLength;
    }
    return out;
  }
}
