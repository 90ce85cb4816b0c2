// TEST-ONLY fault injection: a model config parameter that makes its worker throw or exit at a
// chosen engine step (LLM) or model execution (classic), so tests can watch supervision work:
//
//   parameters { key: "fault_injection" value { string_value: "throw_at_step:5" } }
//
// Forms: throw_at_step:N, exit_at_step:N (backend "llm"), throw_at_execution:N,
// exit_at_execution:N (backend "onnxruntime"). The parameter is ignored, with a warning, unless
// the server's environment has CONVEYOR_FAULT_INJECTION=1, so a stray config line cannot take
// a production model down; when honoured it is logged loudly at every load.

import type { ModelConfig } from '../contracts/model-config.js';
import type { FaultInjection } from '../contracts/worker-messages.js';
import { invalidArg } from '../errors.js';

export const FAULT_INJECTION_PARAMETER = 'fault_injection';
export const FAULT_INJECTION_ENV = 'CONVEYOR_FAULT_INJECTION';
/** The exit code of an injected exit (EX_SOFTWARE), distinct from a crash's 1. */
export const FAULT_EXIT_CODE = 70;

const FORM = /^(throw|exit)_at_(step|execution):([1-9][0-9]*)$/;

export function parseFaultInjection(spec: string): FaultInjection {
  const match = FORM.exec(spec.trim());
  if (!match) throw invalidArg(`parameter ${FAULT_INJECTION_PARAMETER} must be <throw|exit>_at_<step|execution>:<N>, got '${spec}'`);
  return { action: match[1] as FaultInjection['action'], at: match[2] as FaultInjection['at'], count: Number(match[3]) };
}

/**
 * The fault a model's config asks for, when the environment allows it. `at` is what this
 * backend counts ('step' for the LLM engine, 'execution' for instances); asking for the other
 * is a config error.
 */
export function faultInjectionOf(config: ModelConfig, at: FaultInjection['at'], log: (line: string) => void, env: NodeJS.ProcessEnv = process.env): FaultInjection | undefined {
  const spec = config.parameters[FAULT_INJECTION_PARAMETER]?.string_value;
  if (spec === undefined) return undefined;
  const fault = parseFaultInjection(spec);
  if (fault.at !== at) throw invalidArg(`parameter ${FAULT_INJECTION_PARAMETER}: backend '${config.backend}' counts ${at}s, not ${fault.at}s`);
  if (env[FAULT_INJECTION_ENV] !== '1') {
    log(`WARNING ${config.name}: parameter ${FAULT_INJECTION_PARAMETER} ignored (test-only; set ${FAULT_INJECTION_ENV}=1 to honour it)`);
    return undefined;
  }
  log(`WARNING ${config.name}: TEST-ONLY FAULT INJECTION ACTIVE: every worker will ${fault.action} at ${fault.at} ${fault.count}`);
  return fault;
}

/**
 * The worker side: call `reached()` before each step or execution (the instance worker before
 * each model execution; the engine's runner, wrapped by src/runners/create-runner.ts, before
 * each step's model call).
 */
export class FaultPoint {
  private count = 0;

  constructor(private readonly fault: FaultInjection | undefined) {}

  reached(): void {
    if (this.fault === undefined) return;
    this.count += 1;
    if (this.count !== this.fault.count) return;
    const what = `${this.fault.at} ${this.fault.count}`;
    if (this.fault.action === 'exit') process.exit(FAULT_EXIT_CODE);
    throw new Error(`fault injection: throw at ${what}`);
  }
}
