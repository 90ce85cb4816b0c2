// vLLM's KV event wire layout, pure. vLLM encodes its events with msgspec as array-like tagged
// structs, so each event is a msgpack array whose first element is the struct's name:
//   BlockStored       ["BlockStored", block_hashes, parent_block_hash, token_ids, block_size, lora_id, medium]
//   BlockRemoved      ["BlockRemoved", block_hashes, medium]
//   AllBlocksCleared  ["AllBlocksCleared"]
// and a batch is [ts, events, data_parallel_rank], ts a float64 of Unix seconds. A ZeroMQ
// message is three frames: topic, the batch's sequence number (8 bytes, big-endian), the batch.
//
// Block hashes: Conveyor's are non-negative integers below 2^53 (block-hash.ts), sent as msgpack
// unsigned integers — vLLM's ExternalBlockHash in its int form — so a hash on the wire equals
// the pool's own. The first block of a chain has no parent (nil), whatever its salt: the salt is
// already inside every hash of the chain.

import { encode } from '@msgpack/msgpack';
import type { KvCacheEvent } from '../kv-cache/cache-events.js';

/** Where the blocks live, in vLLM's words: the engine's own KV pool (not an offload tier). */
export const MEDIUM = 'GPU';
/** One engine per publisher: Conveyor has no data parallelism within an engine. */
export const DATA_PARALLEL_RANK = 0;
/** The replay stream's last message carries this sequence number (-1 as a signed 8-byte integer). */
export const END_OF_REPLAY = new Uint8Array(8).fill(0xff);

type WireEvent = readonly (string | number | null | readonly number[])[];

/** One event as vLLM's tagged array. */
export function wireEvent(event: KvCacheEvent): WireEvent {
  switch (event.kind) {
    case 'stored':
      // lora_id: Conveyor serves no LoRA adapters, so always nil.
      return ['BlockStored', event.blockHashes, event.parentBlockHash, event.tokenIds, event.blockSize, null, MEDIUM];
    case 'removed':
      return ['BlockRemoved', event.blockHashes, MEDIUM];
    case 'cleared':
      return ['AllBlocksCleared'];
  }
}

/**
 * The batch payload. The timestamp is written by hand as float64: a generic encoder would write
 * a whole-second timestamp as an integer, and msgspec's decoder of a `float` field accepts both,
 * but other decoders of a float do not.
 */
export function encodeBatch(timestampSeconds: number, events: readonly KvCacheEvent[], dataParallelRank: number = DATA_PARALLEL_RANK): Uint8Array {
  const body = encode(events.map(wireEvent));
  const rank = encode(dataParallelRank);
  const out = new Uint8Array(1 + 9 + body.length + rank.length);
  out[0] = 0x93; // fixarray of 3
  out[1] = 0xcb; // float64
  new DataView(out.buffer).setFloat64(2, timestampSeconds, false);
  out.set(body, 10);
  out.set(rank, 10 + body.length);
  return out;
}

/** A sequence number as its 8-byte big-endian frame. */
export function sequenceFrame(sequence: number): Uint8Array {
  const frame = new Uint8Array(8);
  new DataView(frame.buffer).setBigUint64(0, BigInt(sequence), false);
  return frame;
}

/** The start sequence of a replay request frame (8 bytes, big-endian), or null when malformed. */
export function readSequenceFrame(frame: Uint8Array): number | null {
  if (frame.length !== 8) return null;
  const value = new DataView(frame.buffer, frame.byteOffset, 8).getBigUint64(0, false);
  return value > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(value);
}
