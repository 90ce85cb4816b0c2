// The building blocks of the generation-parameter declaration: zod schemas for the value shapes
// requests use (finite numbers, safe integers, flags, token-id lists), each carrying the
// message a rejection reads and the value kind text-only protocols convert from.
//
// Messages are templates: `{}` stands for the field's own name and `{other_field}` for another
// declared field, both filled in with the caller's wire names when the error is raised
// (parse.ts), so a rejection reads in the protocol's own vocabulary.

import { z } from 'zod';

/** How a value is written where protocols carry every parameter as text (Triton's string parameters). */
export type ValueKind = 'number' | 'int' | 'bool' | 'string' | 'strings' | 'ints' | 'object';

/** The kind of each declared field's value, read by protocols that must convert text first. */
export const valueKinds = z.registry<{ readonly kind: ValueKind }>();

/** A received value as a message quotes it: short, and never the whole of a large one. */
export function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === 'number') return String(value);
  return Array.isArray(value) ? 'an array' : typeof value;
}

/** Absent, null and omitted are one thing: the model's default applies. */
export function optional<T extends z.ZodType>(schema: T) {
  const wrapped = schema.nullish().transform((value) => value ?? undefined);
  const kind = valueKinds.get(schema);
  if (kind) valueKinds.add(wrapped, kind);
  return wrapped;
}

type Rule = (value: number) => boolean;

/** A finite number; `ok` names the accepted range in `rule` ("must be in [0, 1]"). */
export function finite(ok?: Rule, rule?: string) {
  const base = z.number({ error: (iss) => `{} must be a finite number, got ${describe(iss.input)}` });
  const checked = ok && rule ? base.refine(ok, { error: (iss) => `{} ${rule}, got ${String(iss.input)}` }) : base;
  return checked.register(valueKinds, { kind: 'number' });
}

/** A safe integer, then the range check. */
export function integer(ok?: Rule, rule?: string) {
  const base = z
    .number({ error: (iss) => `{} must be a finite number, got ${describe(iss.input)}` })
    .refine(Number.isSafeInteger, { error: (iss) => `{} must be an integer, got ${String(iss.input)}`, abort: true });
  const checked = ok && rule ? base.refine(ok, { error: (iss) => `{} ${rule}, got ${String(iss.input)}` }) : base;
  return checked.register(valueKinds, { kind: 'int' });
}

export function flag() {
  return z.boolean({ error: (iss) => `{} must be a boolean, got ${describe(iss.input)}` }).register(valueKinds, { kind: 'bool' });
}

/** Picks the schema by the value's type (for a field two APIs give different types), keeping that schema's messages. */
export function byType<A extends z.ZodType, B extends z.ZodType>(isB: (value: unknown) => boolean, a: A, b: B) {
  return z.unknown().transform((value, ctx): z.output<A> | z.output<B> => {
    const result = (isB(value) ? b : a).safeParse(value);
    if (result.success) return result.data;
    for (const issue of result.error.issues) ctx.addIssue({ code: 'custom', message: issue.message, path: issue.path });
    return z.NEVER;
  });
}

/** Non-negative integer token ids below vocabSize (stop_token_ids; prompts of ids use the same rule). */
export function tokenIds(vocabSize: number) {
  return z
    .custom<readonly number[]>(Array.isArray, { error: '{} must be an array of token ids' })
    .transform((ids, ctx) => {
      for (const id of ids) {
        if (typeof id !== 'number' || !Number.isInteger(id) || id < 0) ctx.addIssue({ code: 'custom', message: `{} must contain non-negative integer token ids, got ${describe(id)}` });
        else if (id >= vocabSize) ctx.addIssue({ code: 'custom', message: `{}: token id ${id} is not in the vocabulary (0..${vocabSize - 1})` });
        else continue;
        return z.NEVER;
      }
      return [...ids];
    })
    .register(valueKinds, { kind: 'ints' });
}
