// A JSON request body's first checks, the same for every front end that reads one: an object,
// a `model` naming what to run, no field the protocol does not define. What a protocol calls an
// unknown field (OpenAI's unknown_parameter, Anthropic's "Extra inputs are not permitted") and
// how it words a missing model stay the protocol's.

import { invalidArg } from '../../errors.js';
import { isObject } from '../../vocabulary/index.js';

export { isObject } from '../../vocabulary/index.js';

/** A request body as the readers see it: JSON object fields, not yet checked. */
export type Body = Readonly<Record<string, unknown>>;

export function requireObject(body: unknown): Body {
  if (!isObject(body)) throw invalidArg('the request body must be a JSON object');
  return body;
}

/** The body's `model`, a non-empty string; `message` is the protocol's wording of the refusal. */
export function requireModel(body: Body, message = 'model must be a non-empty string'): string {
  const model = body.model;
  if (typeof model !== 'string' || model.length === 0) throw invalidArg(message, 'model');
  return model;
}

/** Hands every field outside `allowed` to the protocol's `refuse`, which throws for one it will not take. */
export function checkFields(body: Body, allowed: ReadonlySet<string>, refuse: (field: string, value: unknown) => void): void {
  for (const [field, value] of Object.entries(body)) if (!allowed.has(field)) refuse(field, value);
}
