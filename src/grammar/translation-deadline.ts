// The compile bound (--structured-outputs-compile-timeout-secs) over the translation of a spec
// into grammar text. The translation is synchronous on the grammar worker, the thread that serves
// every constrained request's masks, and its costly parts are automata built state by state from
// regex derivatives (patterns, key languages, oneOf over strings) and the guard's plan: a schema
// of a few hundred patterns whose automata each run to MAX_AUTOMATON_STATES held it for tens of
// seconds. So those loops ask one deadline, set around a translation; a translation past it ends
// with TranslationTimeout, which the engine answers as the compile bound's refusal. One
// translation runs at a time (it is synchronous), so the deadline is this module's own state.

/** A translation ran past its deadline. */
export class TranslationTimeout extends Error {}

let deadline = Number.POSITIVE_INFINITY;

/** What `translate` returns, where it finishes within `ms` (undefined or 0: unbounded); TranslationTimeout otherwise. */
export function withinDeadline<T>(ms: number | undefined, translate: () => T): T {
  const saved = deadline;
  deadline = ms ? Math.min(saved, performance.now() + ms) : saved;
  try {
    return translate();
  } finally {
    deadline = saved;
  }
}

/** Throws TranslationTimeout once the current translation's deadline has passed (a clock read: call it per unit of real work). */
export function checkDeadline(): void {
  if (deadline !== Number.POSITIVE_INFINITY && performance.now() > deadline) throw new TranslationTimeout('the translation ran past its deadline');
}
