// The default repository's pipelines (text-embedder, image-classifier: Triton ensembles with
// TypeScript steps) against the real server over models/repository itself, through KServe HTTP
// (JSON and binary tensors), gRPC ModelInfer and /v1/embeddings with the OpenAI SDK. Every answer
// is compared with the same steps done by the client around a direct call of bert-tiny /
// resnet-tiny (bench/scenarios/infer/client-steps.ts, written apart from the server's steps).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import OpenAI from 'openai';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { meanPool, preprocessImage, tokenizeForBert, topK, IMAGE_SIZE } from '../../bench/scenarios/infer/client-steps.js';
import { DEFAULT_REPOSITORY } from '../../models/default-repository.js';
import { startTestServer, type TestServer } from '../support/server.js';

const PROTOS = join(import.meta.dirname, '..', '..', 'protos');
const TEXTS = ['hello world', 'a much longer sentence about pipelines in an inference server', 'short'];
const LABELS = readFileSync(join(DEFAULT_REPOSITORY, 'resnet-tiny', 'labels.txt'), 'utf8').split('\n');

type Json = Record<string, unknown>;
interface JsonTensor {
  name: string;
  datatype: string;
  shape: number[];
  data: unknown[];
}

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer(DEFAULT_REPOSITORY, ['--model-control-mode', 'explicit', '--load-model', 'text-embedder', '--load-model', 'image-classifier']);
});
afterAll(async () => {
  await server?.stop();
});

async function inferJson(model: string, inputs: unknown[]): Promise<{ status: number; body: Json }> {
  const response = await fetch(`${server.http}/v2/models/${model}/infer`, { method: 'POST', body: JSON.stringify({ inputs }) });
  return { status: response.status, body: (await response.json()) as Json };
}
const outputOf = (body: Json, name: string): JsonTensor => (body['outputs'] as JsonTensor[]).find((o) => o.name === name)!;

/** KServe's BYTES layout for binary tensors and gRPC raw contents: each element's 4-byte LE length, then its bytes. */
function lengthPrefixed(elements: readonly Uint8Array[]): Buffer {
  return Buffer.concat(elements.flatMap((e) => [Buffer.from(new Uint32Array([e.byteLength]).buffer), Buffer.from(e)]));
}

/** One request with binary tensors in and every output as binary out: the outputs' JSON and their bytes. */
async function inferBinary(model: string, input: string, elements: readonly Uint8Array[]): Promise<{ status: number; header: Json; raw: Map<string, Uint8Array> }> {
  const data = lengthPrefixed(elements);
  const header = Buffer.from(
    JSON.stringify({ inputs: [{ name: input, datatype: 'BYTES', shape: [elements.length, 1], parameters: { binary_data_size: data.byteLength } }], parameters: { binary_data_output: true } }),
  );
  const response = await fetch(`${server.http}/v2/models/${model}/infer`, {
    method: 'POST',
    body: Buffer.concat([header, data]),
    headers: { 'Inference-Header-Content-Length': String(header.byteLength) },
  });
  const bytes = new Uint8Array(await response.arrayBuffer());
  if (response.status !== 200) return { status: response.status, header: JSON.parse(new TextDecoder().decode(bytes)) as Json, raw: new Map() };
  const length = Number(response.headers.get('inference-header-content-length'));
  const json = JSON.parse(new TextDecoder().decode(bytes.subarray(0, length))) as Json;
  const raw = new Map<string, Uint8Array>();
  let at = length;
  for (const output of json['outputs'] as { name: string; parameters: { binary_data_size: number } }[]) {
    raw.set(output.name, bytes.slice(at, at + output.parameters.binary_data_size));
    at += output.parameters.binary_data_size;
  }
  return { status: response.status, header: json, raw };
}

const floats = (raw: Uint8Array): number[] => Array.from(new Float32Array(new Uint8Array(raw).buffer));
function expectClose(actual: readonly number[], expected: readonly number[], digits = 5): void {
  expect(actual).toHaveLength(expected.length);
  actual.forEach((v, i) => expect(Math.abs(v - expected[i]!)).toBeLessThan(10 ** -digits));
}

async function statsOf(model: string): Promise<{ inference_count: number; execution_count: number }> {
  const body = (await (await fetch(`${server.http}/v2/models/${model}/stats`)).json()) as { model_stats: { inference_count: number; execution_count: number }[] };
  return body.model_stats[0]!;
}

/** Tokenize, bert-tiny (each text alone, unpadded), mean-pool: the client's own chain. */
async function embeddingsByHand(texts: readonly string[]): Promise<number[][]> {
  const rows: number[][] = [];
  for (const text of texts) {
    const batch = await tokenizeForBert([text]);
    const shape = [1, batch.width];
    const inputs = [
      { name: 'input_ids', datatype: 'INT64', shape, data: Array.from(batch.inputIds, Number) },
      { name: 'attention_mask', datatype: 'INT64', shape, data: Array.from(batch.attentionMask, Number) },
      { name: 'token_type_ids', datatype: 'INT64', shape, data: Array.from(batch.tokenTypeIds, Number) },
    ];
    const { body } = await inferJson('bert-tiny', inputs);
    const hidden = Float32Array.from(outputOf(body, 'last_hidden_state').data as number[]);
    rows.push(Array.from(meanPool(hidden, batch.attentionMask, 1, batch.width)[0]!));
  }
  return rows;
}

/** Preprocess on the client, resnet-tiny, top-5: the client's own chain. */
async function classifyByHand(image: Uint8Array): Promise<ReturnType<typeof topK>> {
  const pixels = await preprocessImage(image);
  const { body } = await inferJson('resnet-tiny', [{ name: 'input', datatype: 'FP32', shape: [1, 3, IMAGE_SIZE, IMAGE_SIZE], data: Array.from(pixels) }]);
  return topK(outputOf(body, 'logits').data as number[], LABELS);
}

/** A deterministic image with structure (gradients and a block), so the classes depend on the pixels. */
function testPixels(width: number, height: number): Buffer {
  const pixels = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const at = (y * width + x) * 3;
      const inBlock = x > width / 3 && x < width / 2 && y > height / 4;
      pixels[at] = inBlock ? 240 : (x * 255) / width;
      pixels[at + 1] = (y * 255) / height;
      pixels[at + 2] = inBlock ? 20 : ((x + y) * 97) % 256;
    }
  }
  return pixels;
}
const raw = (width: number, height: number) => sharp(testPixels(width, height), { raw: { width, height, channels: 3 } });

describe('default repository pipelines', () => {
  it('are in the repository and READY with their steps', async () => {
    const index = (await (await fetch(`${server.http}/v2/repository/index`, { method: 'POST', body: '{}' })).json()) as Json[];
    for (const name of ['text-embedder', 'image-classifier', 'bert-tokenize', 'mean-pool', 'image-preprocess', 'image-top5', 'bert-tiny', 'resnet-tiny']) {
      expect(index).toContainEqual(expect.objectContaining({ name, state: 'READY' }));
    }
    const metadata = (await (await fetch(`${server.http}/v2/models/text-embedder`)).json()) as Json;
    expect(metadata).toMatchObject({ platform: 'ensemble', inputs: [{ name: 'TEXT', datatype: 'BYTES', shape: [-1, 1] }] });
  });

  it('text-embedder over JSON: texts of different lengths in one request, equal to tokenizer → bert-tiny → mean-pool by hand', async () => {
    const { status, body } = await inferJson('text-embedder', [{ name: 'TEXT', datatype: 'BYTES', shape: [TEXTS.length, 1], data: TEXTS }]);
    expect(status).toBe(200);
    const embedding = outputOf(body, 'EMBEDDING');
    expect(embedding).toMatchObject({ datatype: 'FP32', shape: [TEXTS.length, 32] });
    const expected = await embeddingsByHand(TEXTS);
    expectClose(embedding.data as number[], expected.flat());
    const rows = embedding.data as number[];
    for (let r = 0; r < TEXTS.length; r++) expect(Math.hypot(...rows.slice(r * 32, (r + 1) * 32))).toBeCloseTo(1, 5);
    const lengths = (await tokenizeForBert(TEXTS)).lengths;
    expect(outputOf(body, 'NUM_TOKENS').data).toEqual(lengths);
  });

  it('text-embedder over binary tensors and gRPC ModelInfer', async () => {
    const expected = (await embeddingsByHand(TEXTS)).flat();
    const encoded = TEXTS.map((t) => new TextEncoder().encode(t));
    const binary = await inferBinary('text-embedder', 'TEXT', encoded);
    expect(binary.status).toBe(200);
    expectClose(floats(binary.raw.get('EMBEDDING')!), expected);

    const definition = loadSync(['grpc_service.proto'], { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true, includeDirs: [PROTOS] });
    const root = grpc.loadPackageDefinition(definition) as unknown as { inference: { GRPCInferenceService: new (...a: unknown[]) => grpc.Client & Record<string, (...args: unknown[]) => unknown> } };
    const client = new root.inference.GRPCInferenceService(server.grpcAddress, grpc.credentials.createInsecure());
    try {
      const request = { model_name: 'text-embedder', inputs: [{ name: 'TEXT', datatype: 'BYTES', shape: [TEXTS.length, 1] }], raw_input_contents: [lengthPrefixed(encoded)] };
      const reply = await new Promise<Json>((resolve, reject) => client['ModelInfer']!(request, (error: grpc.ServiceError | null, r: Json) => (error ? reject(error) : resolve(r))));
      const names = (reply['outputs'] as { name: string }[]).map((o) => o.name);
      expectClose(floats((reply['raw_output_contents'] as Uint8Array[])[names.indexOf('EMBEDDING')]!), expected);
    } finally {
      client.close();
    }
  });

  it('image-classifier on a PNG and a JPEG: top-5 equal to resnet-tiny on the same preprocessed tensor', async () => {
    const png = await raw(320, 240).png().toBuffer();
    const jpeg = await raw(200, 300).jpeg({ quality: 90 }).toBuffer();
    const { status, raw: outputs, header } = await inferBinary('image-classifier', 'IMAGE', [png, jpeg]);
    expect(status).toBe(200);
    expect((header['outputs'] as JsonTensor[]).map((o) => [o.name, o.datatype, o.shape])).toEqual([
      ['LABELS', 'BYTES', [2, 5]],
      ['SCORES', 'FP32', [2, 5]],
      ['CLASS_IDS', 'INT64', [2, 5]],
    ]);
    const labels: string[] = [];
    const bytes = outputs.get('LABELS')!;
    for (let at = 0; at < bytes.byteLength; ) {
      const length = new DataView(bytes.buffer, bytes.byteOffset + at, 4).getUint32(0, true);
      labels.push(new TextDecoder().decode(bytes.subarray(at + 4, at + 4 + length)));
      at += 4 + length;
    }
    const ids = Array.from(new BigInt64Array(new Uint8Array(outputs.get('CLASS_IDS')!).buffer), Number);
    const scores = floats(outputs.get('SCORES')!);
    for (const [row, image] of [png, jpeg].entries()) {
      const expected = await classifyByHand(image);
      expect(ids.slice(row * 5, row * 5 + 5)).toEqual(expected.classIds);
      expect(labels.slice(row * 5, row * 5 + 5)).toEqual(expected.labels);
      expectClose(scores.slice(row * 5, row * 5 + 5), expected.scores);
    }
    // A JSON client sends the file's base64 text (BYTES elements are strings there): the same answer.
    const json = await inferJson('image-classifier', [{ name: 'IMAGE', datatype: 'BYTES', shape: [1, 1], data: [png.toString('base64')] }]);
    expect(json.status).toBe(200);
    expect(outputOf(json.body, 'LABELS').data).toEqual(labels.slice(0, 5));
  });

  it('image-preprocess normalises with ImageNet mean and std, RGB whatever the source', async () => {
    // A one-channel (greyscale) PNG: the step turns it into three equal RGB planes.
    const grey = await sharp(Buffer.alloc(64 * 48, 128), { raw: { width: 64, height: 48, channels: 1 } })
      .png()
      .toBuffer();
    const { status, raw: outputs } = await inferBinary('image-preprocess', 'IMAGE', [grey]);
    expect(status).toBe(200);
    const pixels = floats(outputs.get('input')!);
    expect(pixels).toHaveLength(3 * IMAGE_SIZE * IMAGE_SIZE);
    const plane = IMAGE_SIZE * IMAGE_SIZE;
    [0.485, 0.456, 0.406].forEach((mean, c) => {
      const std = [0.229, 0.224, 0.225][c]!;
      expect(pixels[c * plane + 1000]).toBeCloseTo((128 / 255 - mean) / std, 5);
    });
  });

  it('bad image bytes: a 400 naming the input, and the pipeline still serves', async () => {
    const json = await inferJson('image-classifier', [{ name: 'IMAGE', datatype: 'BYTES', shape: [1, 1], data: ['this is not an image'] }]);
    expect(json.status).toBe(400);
    expect(json.body['error']).toMatch(/image-preprocess.*input 'IMAGE'\[0\] is not an image/);
    const png = await raw(40, 40).png().toBuffer();
    const truncated = await inferBinary('image-classifier', 'IMAGE', [png, png.subarray(0, 60)]);
    expect(truncated.status).toBe(400);
    expect(truncated.header['error']).toContain("input 'IMAGE'[1]");
    expect((await inferBinary('image-classifier', 'IMAGE', [png])).status).toBe(200);
  });

  it('concurrent requests batch inside bert-tiny and resnet-tiny', async () => {
    const [bert0, resnet0] = [await statsOf('bert-tiny'), await statsOf('resnet-tiny')];
    const png = await raw(64, 64).png().toBuffer();
    const texts = Array.from({ length: 16 }, (_, i) => `concurrent request number ${i}`);
    const answers = await Promise.all([
      ...texts.map((text) => inferJson('text-embedder', [{ name: 'TEXT', datatype: 'BYTES', shape: [1, 1], data: [text] }])),
      ...Array.from({ length: 16 }, () => inferBinary('image-classifier', 'IMAGE', [png])),
    ]);
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
    const [bert1, resnet1] = [await statsOf('bert-tiny'), await statsOf('resnet-tiny')];
    expect(bert1.inference_count - bert0.inference_count).toBe(16);
    expect(bert1.execution_count - bert0.execution_count).toBeLessThan(16);
    expect(resnet1.inference_count - resnet0.inference_count).toBe(16);
    expect(resnet1.execution_count - resnet0.execution_count).toBeLessThan(16);
  });

  it('/v1/embeddings names text-embedder (OpenAI SDK): float and base64, usage from NUM_TOKENS', async () => {
    const client = new OpenAI({ baseURL: `${server.http}/v1`, apiKey: 'unused', maxRetries: 0 });
    const expected = await embeddingsByHand(TEXTS);
    const floatsResponse = await client.embeddings.create({ model: 'text-embedder', input: TEXTS, encoding_format: 'float' });
    expect(floatsResponse.model).toBe('text-embedder');
    floatsResponse.data.forEach((item, i) => {
      expect(item.index).toBe(i);
      expectClose(item.embedding, expected[i]!);
    });
    const lengths = (await tokenizeForBert(TEXTS)).lengths;
    const total = lengths.reduce((a, b) => a + b, 0);
    expect(floatsResponse.usage).toEqual({ prompt_tokens: total, total_tokens: total });
    // The SDK decodes base64 itself when it asked for it by default.
    const base64 = await client.embeddings.create({ model: 'text-embedder', input: 'hello world' });
    expectClose(base64.data[0]!.embedding, expected[0]!);
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toContain('text-embedder');
    await expect(client.embeddings.create({ model: 'text-embedder', input: [[101, 7592, 102]] })).rejects.toMatchObject({ status: 400 });
    await expect(client.embeddings.create({ model: 'image-classifier', input: 'x' })).rejects.toMatchObject({ status: 400 });
  });
});
