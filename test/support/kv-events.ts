// A KV events consumer's replay request, as llm-d's indexer makes it: a DEALER asks the replay
// socket for every buffered batch from `start` ([empty, start] → [empty, seq, batch]… then
// [empty, -1, empty]). Shared by the tests that must recover batches a SUB socket missed while
// its subscription was still joining (ZeroMQ drops what a PUB sends before that).
import { expect } from 'vitest';
import { Dealer } from 'zeromq';
import { readSequenceFrame, sequenceFrame } from '../../src/kv-events/wire.js';

/** Calls `each` with every replayed batch, in order; resolves with how many there were. */
export async function replayKvEvents(endpoint: string, start: number, each: (sequence: number, payload: Uint8Array) => void): Promise<number> {
  const dealer = new Dealer({ linger: 0 });
  dealer.connect(endpoint);
  let count = 0;
  try {
    await dealer.send([new Uint8Array(0), sequenceFrame(start)]);
    for (;;) {
      const [delimiter, seq, payload] = await dealer.receive();
      expect(delimiter!.length).toBe(0);
      if (payload!.length === 0) {
        expect(seq!.toString('hex')).toBe('ffffffffffffffff');
        return count;
      }
      each(readSequenceFrame(seq!)!, payload!);
      count++;
    }
  } finally {
    dealer.close();
  }
}
