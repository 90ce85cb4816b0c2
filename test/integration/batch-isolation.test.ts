// One bad request must not fail its batch neighbours. Concurrent good /v1/embeddings requests
// share dynamic batches with KServe requests whose token ids, token types or lengths the model
// cannot take. "bert" knows its table sizes (config.json beside the ONNX files), so bad input is
// refused before batching; "bert-raw" is the same model without config.json, so bad input
// reaches onnxruntime inside a stacked batch, which is bisected until only the culprit fails.
import { copyFile, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_REPOSITORY } from '../../models/default-repository.js';
import { configOf, makeRepository, startTestServer, type TestServer } from '../support/server.js';

const SEQUENCE = 8;
/** Batches of eight wait up to 200 ms to fill, so concurrent requests share executions. */
const batchingConfig = (name: string) =>
  configOf('bert-tiny', name, (t) =>
    t.replace('preferred_batch_size: [ 8, 16, 32 ]', 'preferred_batch_size: [ 8 ]').replace('max_queue_delay_microseconds: 2000', 'max_queue_delay_microseconds: 200000'),
  );

let server: TestServer;

beforeAll(async () => {
  const repository = await makeRepository([{ name: 'bert', from: 'bert-tiny', config: batchingConfig('bert') }]);
  const raw = join(repository, 'bert-raw');
  await mkdir(join(raw, '1'), { recursive: true });
  await writeFile(join(raw, 'config.pbtxt'), batchingConfig('bert-raw'));
  for (const file of ['model.onnx', 'tokenizer.json', 'tokenizer_config.json']) await copyFile(join(DEFAULT_REPOSITORY, 'bert-tiny', '1', file), join(raw, '1', file));
  server = await startTestServer(repository);
});

afterAll(async () => {
  await server?.stop();
});

const goodIds = (i: number): number[] => [101, ...Array.from({ length: SEQUENCE - 2 }, (_, t) => 1000 + ((i * 7 + t) % 5000)), 102];

async function embed(model: string, i: number): Promise<number> {
  const response = await fetch(`${server.http}/v1/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model, input: [goodIds(i)] }) });
  const body = (await response.json()) as { data?: { embedding: number[] }[] };
  if (response.status === 200) expect(body.data?.[0]?.embedding).toHaveLength(32);
  return response.status;
}

interface BadInput {
  readonly ids: number[];
  readonly types: number[];
}

const outOfVocabulary = (): BadInput => ({ ids: goodIds(3).map((id, t) => (t === 4 ? 40_000 : id)), types: Array(SEQUENCE).fill(0) });
const badTokenType = (): BadInput => ({
  ids: goodIds(4),
  types: Array(SEQUENCE)
    .fill(0)
    .map((_, t) => (t === 2 ? 2 : 0)),
});
const tooLong = (): BadInput => ({ ids: Array(600).fill(1000), types: Array(600).fill(0) });

async function inferKserve(model: string, bad: BadInput): Promise<{ status: number; body: { error?: string } }> {
  const tensor = (name: string, data: number[]) => ({ name, datatype: 'INT64', shape: [1, data.length], data });
  const inputs = [
    tensor('input_ids', bad.ids),
    tensor(
      'attention_mask',
      bad.ids.map(() => 1),
    ),
    tensor('token_type_ids', bad.types),
  ];
  const response = await fetch(`${server.http}/v2/models/${model}/infer`, { method: 'POST', body: JSON.stringify({ inputs }) });
  return { status: response.status, body: (await response.json()) as { error?: string } };
}

/** Good embeddings and bad KServe requests at once; every good one must succeed. */
async function mixedLoad(model: string, bad: readonly BadInput[]): Promise<{ status: number; body: { error?: string } }[]> {
  const good = Array.from({ length: 24 }, (_, i) => embed(model, i));
  const refused = bad.map((b) => inferKserve(model, b));
  expect(await Promise.all(good)).toEqual(Array(24).fill(200));
  const answers = await Promise.all(refused);
  for (const answer of answers) {
    expect(answer.status).toBe(400);
    expect(Object.keys(answer.body)).toEqual(['error']);
  }
  return answers;
}

describe('batch isolation', () => {
  it('refuses out-of-range ids before batching when the model knows its tables', async () => {
    const [vocab, types, long] = await mixedLoad('bert', [outOfVocabulary(), badTokenType(), tooLong(), outOfVocabulary()]);
    expect(vocab!.body.error).toBe("input 'input_ids' holds 40000 at element 4, outside the model's vocabulary (0..30521)");
    expect(types!.body.error).toBe("input 'token_type_ids' holds 2 at element 2, outside the model's token type vocabulary (0..1)");
    expect(long!.body.error).toBe("input 'input_ids' has a sequence of 600 positions; the model's position table holds 512");
  });

  it('isolates the culprit of a batch onnxruntime refuses when the model does not know its tables', async () => {
    const answers = await mixedLoad('bert-raw', [outOfVocabulary(), outOfVocabulary(), badTokenType(), tooLong()]);
    for (const answer of answers) expect(answer.body.error).toMatch(/^the model could not run on this request's input: onnxruntime: /);
    // Requests did share executions (fewer executions than inferences), and the model still serves.
    const stats = server.manager.resolve('bert-raw').statistics();
    expect(stats.execution_count).toBeLessThan(stats.inference_count);
    expect(await embed('bert-raw', 99)).toBe(200);
  });

  it('answers gRPC ModelInfer with INVALID_ARGUMENT for out-of-vocabulary ids', async () => {
    const definition = loadSync(['grpc_service.proto'], { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true, includeDirs: [join(import.meta.dirname, '..', '..', 'protos')] });
    const root = grpc.loadPackageDefinition(definition) as unknown as { inference: { GRPCInferenceService: new (address: string, credentials: grpc.ChannelCredentials) => grpc.Client } };
    const client = new root.inference.GRPCInferenceService(server.grpcAddress, grpc.credentials.createInsecure()) as grpc.Client &
      Record<string, (request: object, callback: (error: grpc.ServiceError | null) => void) => void>;
    const bad = outOfVocabulary();
    const tensor = (name: string, data: number[]) => ({ name, datatype: 'INT64', shape: [1, data.length], contents: { int64_contents: data } });
    for (const model of ['bert', 'bert-raw']) {
      const error = await new Promise<grpc.ServiceError | null>((resolve) => {
        client.ModelInfer!(
          {
            model_name: model,
            inputs: [
              tensor('input_ids', bad.ids),
              tensor(
                'attention_mask',
                bad.ids.map(() => 1),
              ),
              tensor('token_type_ids', bad.types),
            ],
          },
          resolve,
        );
      });
      expect(error).toMatchObject({ code: grpc.status.INVALID_ARGUMENT });
      expect(error!.details).toMatch(model === 'bert' ? /input 'input_ids' holds 40000/ : /could not run on this request's input/);
    }
    client.close();
  });
});
