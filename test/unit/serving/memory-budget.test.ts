// The memory budget's refusal is a pure policy: what is loaded, what the load needs, the budget.
import { describe, expect, it } from 'vitest';
import { budgetRefusal, totalBytes } from '../../../src/serving/memory-budget.js';

describe('memory budget', () => {
  const needed = { weights: 20, kvCache: 8 };

  it('has no say without a budget (0 = unlimited)', () => {
    expect(budgetRefusal('m', needed, 10 ** 12, 0)).toBeNull();
  });

  it('lets a load through that fits beside everything loaded, to the byte', () => {
    expect(totalBytes(needed)).toBe(28);
    expect(budgetRefusal('m', needed, 72, 100)).toBeNull();
  });

  it('refuses one byte over, naming the budget, what the load needs and what is loaded', () => {
    expect(budgetRefusal('m', needed, 73, 100)).toBe(
      "failed to load 'm': not enough memory under --memory-budget-bytes 100: it needs 28 bytes (20 weights + 8 KV cache) beside the 73 bytes loaded (the variant serving stays loaded until the new one is ready); nothing was unloaded",
    );
    expect(budgetRefusal('m', { weights: 200, kvCache: 0 }, 0, 100)).toContain('needs 200 bytes (200 weights) beside the 0 bytes loaded');
  });
});
