// The engine-level tests' greedy base, declared once beside SamplingParams (benchmarks use it too).
export { GREEDY_SAMPLING } from '../../src/contracts/generate.js';
