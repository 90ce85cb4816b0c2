// Every scenario `npm run bench` knows, in the order --help lists them.

import type { Scenario } from '../harness/scenario.js';
import { engineScenario } from './engine/scenario.js';
import { familiesScenario } from './families/scenario.js';
import { forwardScenario } from './forward/scenario.js';
import { inferScenario } from './infer/scenario.js';
import { jsonSchemaBenchScenario } from './jsonschemabench/scenario.js';
import { precisionScenario } from './precision/scenario.js';
import { serveScenario } from './serve/scenario.js';
import { soakScenario } from './soak/scenario.js';
import { streamingScenario } from './streaming/scenario.js';
import { structuredScenario } from './structured/scenario.js';

export const SCENARIOS: readonly Scenario[] = [
  forwardScenario(),
  inferScenario(),
  engineScenario(),
  serveScenario(),
  streamingScenario(),
  structuredScenario(),
  jsonSchemaBenchScenario(),
  precisionScenario(),
  familiesScenario(),
  soakScenario(),
];
