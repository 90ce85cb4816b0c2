/**
 * A map entry as an own property. A plain assignment of the key `__proto__` would replace the
 * map's prototype instead: the entry vanishes and the new prototype's fields show through every
 * lookup. Every reader that builds an object from keys a client or a file chose writes through this.
 */
export function setOwnEntry(record: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(record, key, { value, enumerable: true, writable: true, configurable: true });
}
