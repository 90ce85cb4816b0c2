// Deterministic pseudo-random numbers for weights and test inputs. Only integer arithmetic and
// one multiply, so every machine produces the same bits (no Math.random, no transcendental calls).

export class SeededRandom {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** mulberry32: a 32-bit state generator, good enough for weight init and test data. */
  nextUint32(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    return this.nextUint32() / 4294967296;
  }

  /** Uniform in [-a, a) with a = std·√3, so the values have standard deviation `std`. */
  uniformWithStd(count: number, std: number): Float32Array {
    const a = std * Math.sqrt(3);
    const out = new Float32Array(count);
    for (let i = 0; i < count; i++) out[i] = (this.next() * 2 - 1) * a;
    return out;
  }

  /** Integers in [0, bound). */
  ints(count: number, bound: number): number[] {
    return Array.from({ length: count }, () => this.nextUint32() % bound);
  }
}

/** Derives a child seed from a parent seed and a name, so each weight has its own stream. */
export function seedFor(parent: number, name: string): number {
  let h = (parent >>> 0) ^ 0x811c9dc5;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193) >>> 0;
  return h >>> 0;
}
