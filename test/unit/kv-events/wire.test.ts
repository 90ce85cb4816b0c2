// vLLM's KV event layout, checked byte for byte against msgpack written out by hand (msgspec's
// encoding of array-like tagged structs), and the config parser against vLLM's field names.
import { decode } from '@msgpack/msgpack';
import { describe, expect, it } from 'vitest';
import { defaultKvEventsTopic, parseKvEventsConfig } from '../../../src/kv-events/config.js';
import { ReplayBuffer } from '../../../src/kv-events/replay-buffer.js';
import { encodeBatch, END_OF_REPLAY, readSequenceFrame, sequenceFrame } from '../../../src/kv-events/wire.js';

const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex');
const str = (s: string): string => (0xa0 + s.length).toString(16) + Buffer.from(s).toString('hex');

describe('KV event batch layout', () => {
  it('encodes [ts, [BlockStored, BlockRemoved, AllBlocksCleared], dp_rank] as msgspec does', () => {
    const bytes = encodeBatch(1.5, [
      { kind: 'stored', blockHashes: [7, 2 ** 40], parentBlockHash: null, tokenIds: [1, 2, 3, 4], blockSize: 2 },
      { kind: 'stored', blockHashes: [9], parentBlockHash: 2 ** 40, tokenIds: [5, 300], blockSize: 2 },
      { kind: 'removed', blockHashes: [7] },
      { kind: 'cleared' },
    ]);
    const expected = [
      '93', // [ts, events, rank]
      'cb3ff8000000000000', // float64 1.5
      '94', // four events
      // ["BlockStored", [7, 2^40], nil, [1,2,3,4], 2, nil, "GPU"]
      `97${str('BlockStored')}9207cf0000010000000000c09401020304 02c0${str('GPU')}`.replace(' ', ''),
      // ["BlockStored", [9], 2^40, [5, 300], 2, nil, "GPU"]
      `97${str('BlockStored')}9109cf000001000000000092 05cd012c02c0${str('GPU')}`.replace(' ', ''),
      // ["BlockRemoved", [7], "GPU"]
      `93${str('BlockRemoved')}9107${str('GPU')}`,
      // ["AllBlocksCleared"]
      `91${str('AllBlocksCleared')}`,
      '00', // data_parallel_rank 0
    ].join('');
    expect(hex(bytes)).toBe(expected);
    expect(decode(bytes)).toEqual([
      1.5,
      [['BlockStored', [7, 2 ** 40], null, [1, 2, 3, 4], 2, null, 'GPU'], ['BlockStored', [9], 2 ** 40, [5, 300], 2, null, 'GPU'], ['BlockRemoved', [7], 'GPU'], ['AllBlocksCleared']],
      0,
    ]);
  });

  it('writes a whole-second timestamp as a float, not an integer', () => {
    expect(hex(encodeBatch(1_700_000_000, [{ kind: 'cleared' }]).subarray(0, 10))).toBe('93cb41d954fc40000000');
  });

  it('frames sequence numbers as 8 big-endian bytes and reads them back', () => {
    expect(hex(sequenceFrame(0))).toBe('0000000000000000');
    expect(hex(sequenceFrame(258))).toBe('0000000000000102');
    expect(readSequenceFrame(sequenceFrame(2 ** 40 + 3))).toBe(2 ** 40 + 3);
    expect(readSequenceFrame(new Uint8Array(4))).toBeNull();
    expect(hex(END_OF_REPLAY)).toBe('ffffffffffffffff');
  });
});

describe('kv_events_config', () => {
  const topic = defaultKvEventsTopic('pod-1', 8000, 'qwen3-tiny');

  it('is off unless enable_kv_cache_events is true, or with the null publisher', () => {
    expect(topic).toBe('kv@pod-1:8000@qwen3-tiny');
    expect(parseKvEventsConfig(undefined, topic)).toBeNull();
    expect(parseKvEventsConfig('{}', topic)).toBeNull();
    expect(parseKvEventsConfig('{"enable_kv_cache_events": false, "publisher": "zmq"}', topic)).toBeNull();
    expect(parseKvEventsConfig('{"enable_kv_cache_events": true, "publisher": "null"}', topic)).toBeNull();
  });

  it("takes vLLM's defaults, and the model's topic when none is given", () => {
    expect(parseKvEventsConfig('{"enable_kv_cache_events": true}', topic)).toEqual({
      endpoint: 'tcp://*:5557',
      replayEndpoint: null,
      bufferSteps: 10_000,
      hwm: 100_000,
      maxQueueSize: 100_000,
      topic,
    });
    const full = '{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:6000","replay_endpoint":"tcp://*:6001","buffer_steps":5,"hwm":10,"max_queue_size":7,"topic":"mine"}';
    expect(parseKvEventsConfig(full, topic)).toEqual({ endpoint: 'tcp://*:6000', replayEndpoint: 'tcp://*:6001', bufferSteps: 5, hwm: 10, maxQueueSize: 7, topic: 'mine' });
  });

  it('refuses bad JSON, unknown fields and wrong types with a clear message', () => {
    expect(() => parseKvEventsConfig('{', topic)).toThrow(/not JSON/);
    expect(() => parseKvEventsConfig('[]', topic)).toThrow(/JSON object/);
    expect(() => parseKvEventsConfig('{"enable_kv_cache_events": true, "endpiont": "x"}', topic)).toThrow(/unknown field 'endpiont'/);
    expect(() => parseKvEventsConfig('{"enable_kv_cache_events": "yes"}', topic)).toThrow(/must be a boolean/);
    expect(() => parseKvEventsConfig('{"enable_kv_cache_events": true, "buffer_steps": 0}', topic)).toThrow(/positive integer/);
    expect(() => parseKvEventsConfig('{"enable_kv_cache_events": true, "publisher": "kafka"}', topic)).toThrow(/"zmq" or "null"/);
  });
});

describe('ReplayBuffer', () => {
  it('keeps the last N batches and answers from a start sequence', () => {
    const buffer = new ReplayBuffer(3);
    for (let s = 0; s < 5; s++) buffer.push({ sequence: s, payload: new Uint8Array([s]) });
    expect(buffer.length).toBe(3);
    expect(buffer.since(0).map((b) => b.sequence)).toEqual([2, 3, 4]);
    expect(buffer.since(3).map((b) => b.sequence)).toEqual([3, 4]);
    expect(buffer.since(9)).toEqual([]);
  });
});
