// x-vllm-priority: an integer beside the body, winning over its `priority`; absent leaves the request as it is.
import { describe, expect, it } from 'vitest';
import type { ProcessedRequest } from '../../../src/contracts/text-generation.js';
import { priorityOverride, withPriority } from '../../../src/serving/request-priority.js';

describe('priorityOverride', () => {
  it('reads an integer from a header or metadata value, first of several', () => {
    expect(priorityOverride('3')).toBe(3);
    expect(priorityOverride(' -7 ')).toBe(-7);
    expect(priorityOverride(['2', '9'])).toBe(2);
    expect(priorityOverride(undefined)).toBeUndefined();
    expect(priorityOverride([])).toBeUndefined();
    expect(priorityOverride('')).toBeUndefined();
  });

  it('refuses anything else, naming the header', () => {
    for (const bad of ['high', '1.5', '1e3', '99999999999999999999']) {
      expect(() => priorityOverride(bad)).toThrow(expect.objectContaining({ code: 'INVALID_ARG', param: 'x-vllm-priority' }));
    }
  });
});

describe('withPriority', () => {
  const prepared = [{ request: { id: 'a', priority: 5 } }] as unknown as ProcessedRequest[];

  it('sets every request’s priority, or leaves them be without an override', () => {
    expect(withPriority(prepared, -1).map((p) => p.request.priority)).toEqual([-1]);
    expect(withPriority(prepared, undefined)).toBe(prepared);
    expect(prepared[0]!.request.priority).toBe(5);
  });
});
