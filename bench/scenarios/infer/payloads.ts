// One batch-1 request per model, built once from the server's model metadata (as perf_analyzer
// does) and sent unchanged for the whole sweep: the HTTP body in the binary tensor extension the
// way tritonclient sends it, and the gRPC ModelInferRequest with raw_input_contents.

export interface TensorMetadata {
  readonly name: string;
  readonly datatype: string;
  readonly shape: readonly number[];
}

export interface ModelMetadata {
  readonly name: string;
  readonly inputs: readonly TensorMetadata[];
  readonly outputs: readonly TensorMetadata[];
}

export interface InputTensor {
  readonly name: string;
  readonly datatype: string;
  readonly shape: readonly number[];
  /** Little-endian, row-major, as both binary encodings carry it. */
  readonly bytes: Buffer;
}

const ELEMENT_BYTES: Readonly<Record<string, number>> = { INT64: 8, INT32: 4, FP32: 4 };

/**
 * Batch 1; every other free dim becomes `freeDim` (the encoder's sequence length, the CNN's image
 * side). Token ids are fixed pseudo-random values, the attention mask all ones, token types zero.
 */
export function buildInputs(metadata: ModelMetadata, freeDim: number, seed = 1): InputTensor[] {
  const random = lcg(seed);
  return metadata.inputs.map((input) => {
    const [, ...rest] = input.shape;
    const shape = [1, ...rest.map((d) => (d < 0 ? freeDim : d))];
    const count = shape.reduce((a, b) => a * b, 1);
    const size = ELEMENT_BYTES[input.datatype];
    if (size === undefined) throw new Error(`${metadata.name}: input ${input.name} has datatype ${input.datatype}, which the bench does not generate`);
    const bytes = Buffer.alloc(count * size);
    for (let i = 0; i < count; i++) writeElement(bytes, i, input, random);
    return { name: input.name, datatype: input.datatype, shape, bytes };
  });
}

function writeElement(bytes: Buffer, i: number, input: TensorMetadata, random: () => number): void {
  if (input.datatype === 'FP32') {
    bytes.writeFloatLE(random() * 2 - 1, i * 4);
    return;
  }
  const name = input.name.toLowerCase();
  const value = name.includes('mask') ? 1 : name.includes('type') ? 0 : 1000 + Math.floor(random() * 1000);
  if (input.datatype === 'INT64') bytes.writeBigInt64LE(BigInt(value), i * 8);
  else bytes.writeInt32LE(value, i * 4);
}

function lcg(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

export interface HttpBinaryRequest {
  readonly body: Buffer;
  readonly headers: Readonly<Record<string, string>>;
}

/**
 * JSON header, then the raw bytes in input order. Like tritonclient: no Content-Type, and with no
 * outputs named, `binary_data_output` asks for every output in binary.
 */
export function httpBinaryRequest(inputs: readonly InputTensor[]): HttpBinaryRequest {
  const header = {
    inputs: inputs.map((t) => ({ name: t.name, shape: t.shape, datatype: t.datatype, parameters: { binary_data_size: t.bytes.length } })),
    parameters: { binary_data_output: true },
  };
  const json = Buffer.from(JSON.stringify(header));
  return { body: Buffer.concat([json, ...inputs.map((t) => t.bytes)]), headers: { 'Inference-Header-Content-Length': String(json.length) } };
}

/** The ModelInferRequest as @grpc/proto-loader takes it (keepCase field names). */
export function grpcInferRequest(model: string, inputs: readonly InputTensor[]): Record<string, unknown> {
  return {
    model_name: model,
    inputs: inputs.map((t) => ({ name: t.name, datatype: t.datatype, shape: t.shape.map(String) })),
    raw_input_contents: inputs.map((t) => t.bytes),
  };
}

/** Output names and shapes of a binary HTTP infer response; throws unless it is a 200 with every output. */
export function checkHttpResponse(status: number, body: Buffer, headerLength: string | null, metadata: ModelMetadata): string {
  const jsonBytes = headerLength === null ? body.length : Number(headerLength);
  const header = JSON.parse(body.subarray(0, jsonBytes).toString('utf8')) as { error?: string; outputs?: (TensorMetadata & { parameters?: { binary_data_size?: number } })[] };
  if (status !== 200) throw new Error(`${metadata.name}: HTTP ${status}: ${header.error ?? 'no error message'}`);
  const outputs = header.outputs ?? [];
  const binaryBytes = outputs.reduce((sum, o) => sum + (o.parameters?.binary_data_size ?? 0), 0);
  if (jsonBytes + binaryBytes !== body.length) throw new Error(`${metadata.name}: response body is ${body.length} bytes, header says ${jsonBytes} + ${binaryBytes}`);
  for (const expected of metadata.outputs) {
    if (!outputs.some((o) => o.name === expected.name)) throw new Error(`${metadata.name}: output ${expected.name} missing from the response`);
  }
  return outputs.map((o) => `${o.name} [${o.shape.join(', ')}]`).join(', ');
}
