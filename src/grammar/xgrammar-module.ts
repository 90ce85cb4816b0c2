// The one place that loads @mlc-ai/web-xgrammar (xgrammar compiled to WASM, the grammar engine
// vLLM and SGLang use).
//
// The shim: the package is marked "type": "module" but ships a UMD bundle that, under Node, reads
// the CommonJS globals `require` and `__filename` (to locate itself) and assigns its exports to
// `exports`. Imported as ESM it finds neither and would hang its exports on globalThis. So the
// bundle's text is run as a CommonJS module body instead, with its own `exports`, `module`,
// `require`, `__filename` and `console` bound as parameters: nothing global is touched, and each
// load is a fresh WASM instance with its own memory. Its one dynamic `import('module')` becomes a
// call of that `require`: code built by the Function constructor has no module loader behind its
// import() under every host (vitest's, for one).
//
// Why fresh instances matter: xgrammar reports a bad schema, regex or grammar by logging
// "[FATAL] <reason>" and calling emscripten's abort(), which unwinds the WASM stack without
// restoring it; after a few thousand such aborts the instance faults ("memory access out of
// bounds"). The `console` parameter captures the reason, and callers check untrusted specs on a
// disposable instance (grammar-checker.ts) so the instance that holds live matchers never aborts.

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type * as XGrammar from '@mlc-ai/web-xgrammar';

export type XGrammarApi = typeof XGrammar;

export interface XGrammarInstance {
  readonly api: XGrammarApi;
  /** Takes the lines xgrammar logged since the last call (its "[FATAL] …" reasons). */
  drainLog(): string[];
}

const require = createRequire(import.meta.url);
const BUNDLE_PATH = require.resolve('@mlc-ai/web-xgrammar');
const DYNAMIC_IMPORT = "await import('module')";
let bundleSource: string | undefined;

function readBundle(): string {
  const text = readFileSync(BUNDLE_PATH, 'utf8');
  if (!text.includes(DYNAMIC_IMPORT)) throw new Error(`@mlc-ai/web-xgrammar at ${BUNDLE_PATH} is not the bundle this loader knows (no ${DYNAMIC_IMPORT})`);
  return text.replaceAll(DYNAMIC_IMPORT, "require('module')");
}

type ModuleBody = (exports: XGrammarApi, module: { exports: XGrammarApi }, require: NodeJS.Require, filename: string, console: Pick<Console, 'log' | 'warn' | 'error'>) => void;

/** A fresh xgrammar instance (~15 ms to evaluate; its WASM initialises on first use, ~25 ms). */
export function loadXGrammar(): XGrammarInstance {
  bundleSource ??= readBundle();
  const lines: string[] = [];
  const sink = (...parts: unknown[]): void => {
    lines.push(parts.map(String).join(' '));
  };
  const api = {} as XGrammarApi;
  const body = new Function('exports', 'module', 'require', '__filename', 'console', bundleSource) as ModuleBody;
  body(api, { exports: api }, createRequire(BUNDLE_PATH), BUNDLE_PATH, { log: sink, warn: sink, error: sink });
  if (typeof api.GrammarCompiler !== 'function' || typeof api.GrammarMatcher !== 'function') throw new Error(`@mlc-ai/web-xgrammar at ${BUNDLE_PATH} did not export its API`);
  return { api, drainLog: () => lines.splice(0) };
}

/** The reason in xgrammar's log ("[FATAL] file.cc:123: reason"), without the source location. */
export function fatalReason(lines: readonly string[]): string | null {
  for (const line of lines) {
    const match = /\[FATAL\][^:]*:\d+:\s*(.*)$/s.exec(line);
    if (match) return match[1]!.trim();
  }
  return null;
}
