// What a step of n rows costs (step-costs.ts), the figure speculation's gate weighs drafts with.

import { describe, expect, it } from 'vitest';
import { StepCosts } from '../../../src/engine-worker/step-costs.js';

describe('step costs by rows', () => {
  it('a row count’s cost is the median of its latest steps, so one slow step does not decide', () => {
    const costs = new StepCosts();
    for (const ms of [10, 11, 10, 90, 10]) costs.observe(1, ms);
    expect(costs.cost(1)).toBe(10);
    // Only the latest nine count: a machine that got slower is followed.
    for (let i = 0; i < 9; i++) costs.observe(1, 20);
    expect(costs.cost(1)).toBe(20);
  });

  it('between measured row counts it interpolates; outside them it does not guess', () => {
    const costs = new StepCosts();
    costs.observe(8, 10);
    costs.observe(40, 42);
    expect(costs.cost(16)).toBe(18);
    expect(costs.cost(41)).toBeUndefined();
    expect(costs.cost(4)).toBeUndefined();
    expect(costs.ratio(40, 8)).toBeCloseTo(4.2, 10);
    expect(costs.ratio(48, 8)).toBeUndefined();
  });

  it('ignores what no step can be: no rows, negative or non-finite times', () => {
    const costs = new StepCosts();
    costs.observe(0, 5);
    costs.observe(2, Number.NaN);
    costs.observe(2, -1);
    expect(costs.cost(0)).toBeUndefined();
    expect(costs.cost(2)).toBeUndefined();
  });
});
