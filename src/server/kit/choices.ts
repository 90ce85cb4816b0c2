// n choices (times several prompts for completions) as engine requests submitted together, and
// their event streams merged into one stream of (choice index, event). Identical prompts are
// tokenized once and submitted in the same tick, so the prefix cache shares their full blocks.
// Ending the merged stream early, a client disconnect, or one choice failing aborts every
// generation still running.

import type { GenerationEvent, ProcessedRequest } from '../../contracts/text-generation.js';
import type { GenerateInput, LlmModel } from '../../serving/llm-backend.js';
import type { AdmissionSeat } from '../../serving/admission.js';

export interface ChoiceEvent {
  readonly index: number;
  readonly event: GenerationEvent;
}

/** One prompt's prepared request, repeated n times with distinct ids and, when seeded, seeds. */
export async function prepareChoices(model: LlmModel, input: GenerateInput, n: number): Promise<ProcessedRequest[]> {
  const first = await model.prepare(input);
  const choices = [first];
  for (let i = 1; i < n; i++) {
    const { request } = first;
    // The same seed would make every choice identical; vLLM offsets it by the choice index too.
    const seed = request.sampling.seed === null ? null : offsetSeed(request.sampling.seed, i);
    choices.push({ ...first, request: { ...request, id: `${request.id}-${i}`, sampling: { ...request.sampling, seed } } });
  }
  return choices;
}

function offsetSeed(seed: number, i: number): number {
  const next = seed + i;
  return Number.isSafeInteger(next) ? next : seed - i;
}

interface Queue {
  readonly items: ChoiceEvent[];
  error?: unknown;
  open: number;
  wake?: () => void;
}

/**
 * Runs every prepared choice and yields their events as they come. Admission (the model's, in
 * the serving layer: Overloaded, a 503 here) takes all choices together on the first pull,
 * before anything is submitted; each choice gives its seat back with its first token.
 */
export async function* runChoices(model: LlmModel, choices: readonly ProcessedRequest[], signal: AbortSignal): AsyncGenerator<ChoiceEvent> {
  const seats = model.admit(choices);
  const stop = new AbortController();
  const combined = AbortSignal.any([signal, stop.signal]);
  const queue: Queue = { items: [], open: choices.length };
  const notify = (): void => queue.wake?.();
  choices.forEach((prepared, index) => void pump(model, prepared, index, combined, seats[index]!, queue).finally(notify));
  try {
    while (true) {
      if (queue.items.length > 0) {
        yield queue.items.shift()!;
        continue;
      }
      if (queue.error !== undefined) throw queue.error;
      if (queue.open === 0) return;
      await new Promise<void>((resolve) => (queue.wake = resolve));
      queue.wake = undefined;
    }
  } finally {
    stop.abort();
  }
}

async function pump(model: LlmModel, prepared: ProcessedRequest, index: number, signal: AbortSignal, seat: AdmissionSeat, queue: Queue): Promise<void> {
  try {
    for await (const event of model.generate(prepared, signal, seat)) {
      queue.items.push({ index, event });
      queue.wake?.();
    }
  } catch (error) {
    queue.error ??= error;
  } finally {
    seat.leave();
    queue.open -= 1;
  }
}
