// Which subschemas hold what the string guard enforces, for guard-plan.ts: one walk over the
// schema document and one pass back along its edges ($refs followed), so a cycle of references
// costs nothing more. Pure.

import { type Json, resolvePointer, type SchemaObject } from './schema-model.js';
import { stringLengths } from './string-lengths.js';

/** Lengths above this are the guard's (and below, the counted grammar's: cheaper to match). */
export const GUARDED_LENGTH_ABOVE = 8;

/**
 * Which schema objects have beneath them a length keyword or a pattern's count (`any`: string-lengths.ts), one past GUARDED_LENGTH_ABOVE
 * (`long`), `uniqueItems: true` (`unique`), either of the last two (`guarded`), or one of the
 * objects to be written in any key order (`objects`, from the seeds: any-order.ts).
 */
export class GuardMarks {
  readonly any = new Set<object>();
  readonly long = new Set<object>();
  readonly unique = new Set<object>();
  readonly guarded = new Set<object>();
  readonly objects = new Set<object>();

  constructor(
    private readonly root: Json,
    /** The object schemas that may be written in any order (any-order.ts). */
    readonly objectCandidates: ReadonlySet<object> = new Set(),
  ) {
    const parents = new Map<object, object[]>();
    const seen = new Set<object>();
    const pending: object[] = [];
    const visit = (node: Json, parent: object | null): void => {
      if (typeof node !== 'object' || node === null) return;
      if (parent !== null) parents.set(node, [...(parents.get(node) ?? []), parent]);
      if (seen.has(node)) return;
      seen.add(node);
      pending.push(node);
    };
    visit(root, null);
    while (pending.length > 0) {
      const node = pending.pop()!;
      const values = Array.isArray(node) ? node : Object.values(node as SchemaObject);
      for (const value of values) visit(value, node);
      if (objectCandidates.has(node)) this.objects.add(node);
      if (!Array.isArray(node)) {
        const object = node as SchemaObject;
        if (typeof object['$ref'] === 'string') {
          const target = resolvePointer(this.root, object['$ref']);
          if (target !== undefined) visit(target, node);
        }
        const lengths = stringLengths(object);
        if (lengths !== null) {
          this.any.add(node);
          if (lengths.min > GUARDED_LENGTH_ABOVE || (lengths.max ?? 0) > GUARDED_LENGTH_ABOVE) {
            this.long.add(node);
            this.guarded.add(node);
          }
        }
        if (object['uniqueItems'] === true) {
          this.unique.add(node);
          this.guarded.add(node);
        }
      }
    }
    for (const marked of [this.any, this.long, this.unique, this.guarded, this.objects]) {
      const queue = [...marked];
      while (queue.length > 0)
        for (const parent of parents.get(queue.pop()!) ?? []) {
          if (marked.has(parent)) continue;
          marked.add(parent);
          queue.push(parent);
        }
    }
  }
}
