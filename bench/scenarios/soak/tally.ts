// Outcomes of a soak, counted per actor. Each actor's requests are of one kind: good ones must
// succeed, bad ones must be refused with a 4xx in their protocol's shape, chaos ones (clients that
// hang up or stop reading) have no right answer but must never hurt the others. `failed` counts
// what breaks the target: a good request that did not succeed, a bad one answered 5xx or 2xx.

export type ActorKind = 'good' | 'bad' | 'chaos';

export interface ActorRow {
  readonly actor: string;
  readonly kind: ActorKind;
  readonly total: number;
  readonly failed: number;
  /** Outcome label → count, most frequent first. */
  readonly outcomes: readonly (readonly [label: string, count: number])[];
}

export class Tally {
  private readonly actors = new Map<string, { kind: ActorKind; outcomes: Map<string, number>; failed: number }>();

  record(actor: string, kind: ActorKind, label: string, ok: boolean): void {
    let entry = this.actors.get(actor);
    if (!entry) this.actors.set(actor, (entry = { kind, outcomes: new Map(), failed: 0 }));
    entry.outcomes.set(label, (entry.outcomes.get(label) ?? 0) + 1);
    if (!ok) entry.failed++;
  }

  rows(): ActorRow[] {
    return [...this.actors].map(([actor, { kind, outcomes, failed }]) => ({
      actor,
      kind,
      failed,
      total: [...outcomes.values()].reduce((a, b) => a + b, 0),
      outcomes: [...outcomes].sort((a, b) => b[1] - a[1]),
    }));
  }
}

/** Totals by kind over every actor's rows. */
export function totalsByKind(rows: readonly ActorRow[]): Record<ActorKind, { total: number; failed: number }> {
  const totals = { good: { total: 0, failed: 0 }, bad: { total: 0, failed: 0 }, chaos: { total: 0, failed: 0 } };
  for (const row of rows) {
    totals[row.kind].total += row.total;
    totals[row.kind].failed += row.failed;
  }
  return totals;
}
