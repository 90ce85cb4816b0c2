// The last N published batches, by sequence number, for subscribers that missed some: a ring of
// fixed capacity (vLLM's buffer_steps), oldest overwritten first. Pure.

export interface BufferedBatch {
  readonly sequence: number;
  readonly payload: Uint8Array;
}

export class ReplayBuffer {
  private readonly ring: (BufferedBatch | undefined)[];
  private next = 0;
  private size = 0;

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError(`replay buffer capacity must be a positive integer, got ${capacity}`);
    this.ring = new Array<BufferedBatch | undefined>(capacity);
  }

  get length(): number {
    return this.size;
  }

  push(batch: BufferedBatch): void {
    this.ring[this.next] = batch;
    this.next = (this.next + 1) % this.capacity;
    this.size = Math.min(this.size + 1, this.capacity);
  }

  /** The buffered batches with sequence ≥ start, oldest first. */
  since(start: number): BufferedBatch[] {
    const out: BufferedBatch[] = [];
    const oldest = (this.next - this.size + this.capacity) % this.capacity;
    for (let i = 0; i < this.size; i++) {
      const batch = this.ring[(oldest + i) % this.capacity]!;
      if (batch.sequence >= start) out.push(batch);
    }
    return out;
  }
}
