// Every scenario `npm run bench` knows, in the order --help lists them.

import type { Scenario } from '../harness/scenario.js';
import { forwardScenario } from './forward/scenario.js';

export const SCENARIOS: readonly Scenario[] = [forwardScenario()];
