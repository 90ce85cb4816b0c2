// TEST-ONLY fault injection: a model config parameter that makes its worker throw or exit at a
// chosen engine step (LLM) or model execution (classic), so tests can watch supervision work:
//
//   parameters { key: "fault_injection" value { string_value: "throw_at_step:5" } }
//
// Forms: throw_at_step:N, exit_at_step:N (backend "llm"), throw_at_draft_pass:N,
// exit_at_draft_pass:N (backend "llm" with a draft model: its Nth forward pass, where a step
// makes several), throw_at_execution:N, exit_at_execution:N (backend "onnxruntime"). The parameter is ignored, with a warning, unless
// the server's environment has CONVEYOR_FAULT_INJECTION=1, so a stray config line cannot take
// a production model down; when honoured it is logged loudly at every load.
//
// The parse workers (src/parse-worker), which serve no model, take theirs from the environment:
// CONVEYOR_PARSE_WORKER_FAULT=throw_at_job:N or exit_at_job:N, under the same
// CONVEYOR_FAULT_INJECTION=1 and the same loud warning. The pool counts its jobs (N is the pool's
// Nth job, whichever worker runs it) and tells the worker that runs it to fail in its middle.

import type { ModelConfig } from '../contracts/model-config.js';
import type { FaultInjection } from '../contracts/worker-messages.js';
import { invalidArg } from '../errors.js';

export const FAULT_INJECTION_PARAMETER = 'fault_injection';
export const FAULT_INJECTION_ENV = 'CONVEYOR_FAULT_INJECTION';
/** The parse workers' fault (their jobs have no model config to carry one). */
export const PARSE_WORKER_FAULT_ENV = 'CONVEYOR_PARSE_WORKER_FAULT';
/** The exit code of an injected exit (EX_SOFTWARE), distinct from a crash's 1. */
export const FAULT_EXIT_CODE = 70;

/** What each counter counts, for messages. */
const COUNTED: Readonly<Record<FaultInjection['at'], string>> = { step: 'steps', draft_pass: 'draft passes', execution: 'executions', job: 'jobs' };

const FORM = /^(throw|exit)_at_(step|draft_pass|execution|job):([1-9][0-9]*)$/;

export function parseFaultInjection(spec: string): FaultInjection {
  const match = FORM.exec(spec.trim());
  if (!match) throw invalidArg(`parameter ${FAULT_INJECTION_PARAMETER} must be <throw|exit>_at_<step|draft_pass|execution|job>:<N>, got '${spec}'`);
  return { action: match[1] as FaultInjection['action'], at: match[2] as FaultInjection['at'], count: Number(match[3]) };
}

/**
 * The fault a model's config asks for, when the environment allows it. `counts` is what this
 * backend counts ('step' and 'draft_pass' for the LLM engine, 'execution' for instances); asking
 * for another is a config error.
 */
export function faultInjectionOf(config: ModelConfig, counts: readonly FaultInjection['at'][], log: (line: string) => void, env: NodeJS.ProcessEnv = process.env): FaultInjection | undefined {
  const spec = config.parameters[FAULT_INJECTION_PARAMETER]?.string_value;
  if (spec === undefined) return undefined;
  const fault = parseFaultInjection(spec);
  if (!counts.includes(fault.at))
    throw invalidArg(`parameter ${FAULT_INJECTION_PARAMETER}: backend '${config.backend}' counts ${counts.map((at) => COUNTED[at]).join(' or ')}, not ${COUNTED[fault.at]}`);
  if (env[FAULT_INJECTION_ENV] !== '1') {
    log(`WARNING ${config.name}: parameter ${FAULT_INJECTION_PARAMETER} ignored (test-only; set ${FAULT_INJECTION_ENV}=1 to honour it)`);
    return undefined;
  }
  log(`WARNING ${config.name}: TEST-ONLY FAULT INJECTION ACTIVE: every worker will ${fault.action} at ${fault.at} ${fault.count}`);
  return fault;
}

/**
 * The parse workers' fault, when the environment asks for one and allows it (warned about
 * either way, as a model's is).
 */
export function parseWorkerFaultOf(warn: (line: string) => void, env: NodeJS.ProcessEnv = process.env): FaultInjection | undefined {
  const spec = env[PARSE_WORKER_FAULT_ENV];
  if (spec === undefined) return undefined;
  const fault = parseFaultInjection(spec);
  if (fault.at !== 'job') throw invalidArg(`${PARSE_WORKER_FAULT_ENV}: the parse workers count jobs, not ${COUNTED[fault.at]}`);
  if (env[FAULT_INJECTION_ENV] !== '1') {
    warn(`WARNING ${PARSE_WORKER_FAULT_ENV} ignored (test-only; set ${FAULT_INJECTION_ENV}=1 to honour it)`);
    return undefined;
  }
  warn(`WARNING parse workers: TEST-ONLY FAULT INJECTION ACTIVE: job ${fault.count} will ${fault.action}`);
  return fault;
}

/**
 * Counts steps, executions or jobs; `due()` says which action the current one must take. The
 * worker side calls `reached()` before each step or execution (the instance worker before each
 * model execution; the engine's runner, wrapped by src/runners/create-runner.ts, before each
 * step's model call, or its draft model's runner before each pass); the parse pool calls `due()`
 * per job and the worker acts with `injectFault`.
 */
export class FaultPoint {
  private count = 0;

  constructor(private readonly fault: FaultInjection | undefined) {}

  /** Counts one; the action to take when this is the one the fault names. */
  due(): FaultInjection['action'] | undefined {
    if (this.fault === undefined) return undefined;
    this.count += 1;
    return this.count === this.fault.count ? this.fault.action : undefined;
  }

  reached(): void {
    const action = this.due();
    if (action !== undefined) injectFault(action, `${this.fault!.at} ${this.fault!.count}`);
  }
}

/** What a due fault does (the parse pool names it in the job it fails). */
export type FaultAction = FaultInjection['action'];

/** Does what a due fault says, on the thread that calls it: exits it (FAULT_EXIT_CODE) or throws. */
export function injectFault(action: FaultAction, what: string): void {
  if (action === 'exit') process.exit(FAULT_EXIT_CODE);
  throw new Error(`fault injection: throw at ${what}`);
}
