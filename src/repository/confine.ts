// Path confinement: every file a config, a load override or a backend names is resolved inside
// the directory it belongs to (the model directory for labels, the version directory for model
// and tokenizer files). The rule has two halves:
// - lexical (pure): relative, no `..` segment, no NUL, not empty;
// - links: the path is walked one component at a time and every symbolic link is followed by
//   reading its text, never by touching what lies outside. A link whose target leaves the root
//   is refused whether or not that target exists, so answers never reveal what is outside.
// The root directory itself may be a link (repositories are assembled from links, and
// `serve --model` links its version directory); only what lies beneath it is confined.
// One wider scope: a Hugging Face cache snapshot (…/models--ORG--NAME/snapshots/<commit>) holds
// only links into ../../blobs/, so there a link may lead anywhere inside its cache entry
// (models--ORG--NAME/), and still nowhere else.
// Messages show paths as `display` (relative to the repository root), never absolute ones.

import { lstat, readlink, realpath } from 'node:fs/promises';
import { isAbsolute, join, sep } from 'node:path';
import { invalidArg } from '../errors.js';

/** A directory paths are confined to, and how messages name it (relative to the repository root). */
export interface ConfinementRoot {
  readonly dir: string;
  readonly display: string;
}

export interface ConfinedPath {
  /** Absolute path with every link resolved; inside the root's real path. */
  readonly path: string;
  /** The name as messages show it: `<display>/<relative>`. */
  readonly display: string;
  readonly exists: boolean;
}

/** Links followed in one resolution before it counts as a loop (Linux's own limit). */
const MAX_LINK_HOPS = 40;

/**
 * Why `relative` is not a plain path inside a directory, as a message about `what` (absolute
 * paths are not echoed), or undefined when it is one. Pure.
 */
export function lexicalProblem(relative: string, what: string): string | undefined {
  const named = `${what} '${relative}'`;
  if (relative === '') return `${what} is empty`;
  if (relative.includes('\0')) return `${what} holds a NUL character`;
  if (relative.startsWith('/') || relative.startsWith('\\') || /^[A-Za-z]:/.test(relative)) return `${what} must be relative to the model directory, not absolute`;
  if (relative.split(/[\\/]/).includes('..')) return `${named} must stay inside the model directory (no '..' segments)`;
  return undefined;
}

/** Throws INVALID_ARG with lexicalProblem()'s message when the lexical rule fails. */
export function requireLexicallyConfined(relative: string, what: string): void {
  const problem = lexicalProblem(relative, what);
  if (problem !== undefined) throw invalidArg(problem);
}

/** The cache entry (…/models--ORG--NAME) a snapshot directory's real path belongs to, or the path itself for any other directory. Pure. */
export function linkScopeOf(rootReal: string): string {
  const parts = rootReal.split(sep);
  const n = parts.length;
  const isSnapshot = n >= 3 && parts[n - 2] === 'snapshots' && /^models--[^/\\]+$/.test(parts[n - 3]!) && parts[n - 1] !== '';
  return isSnapshot ? parts.slice(0, n - 2).join(sep) : rootReal;
}

/** True when `candidate` is `root` or lies beneath it (both absolute and normalized). Pure. */
export function isInside(root: string, candidate: string): boolean {
  return candidate === root || candidate.startsWith(root.endsWith(sep) ? root : root + sep);
}

const components = (path: string): string[] => path.split(/[\\/]/).filter((part) => part !== '' && part !== '.');

/**
 * Resolves `relative` under `root` (see the file comment). Throws INVALID_ARG when the lexical
 * rule fails or a link leads out; a path that does not exist comes back with `exists: false`.
 */
export async function confinedPath(root: ConfinementRoot, relative: string, what: string): Promise<ConfinedPath> {
  requireLexicallyConfined(relative, what);
  const display = `${root.display}/${components(relative).join('/')}`;
  const escape = () => invalidArg(`${what} '${display}' leads outside its directory through a symbolic link`);
  const rootReal = await realpath(root.dir).catch(() => {
    throw invalidArg(`${what} '${display}': the directory '${root.display}' does not exist`);
  });
  const scope = linkScopeOf(rootReal);
  let current = rootReal;
  const pending = components(relative);
  let hops = 0;
  while (pending.length > 0) {
    const part = pending.shift()!;
    if (part === '..') {
      // Only link targets bring `..` here; stepping above the root (a snapshot: its cache entry) is leaving it.
      if (current === scope) throw escape();
      current = current.slice(0, current.lastIndexOf(sep)) || sep;
      continue;
    }
    const next = join(current, part);
    const info = await lstat(next).catch(() => undefined);
    if (info === undefined) return { path: join(next, ...pending), display, exists: false };
    if (!info.isSymbolicLink()) {
      current = next;
      continue;
    }
    if (++hops > MAX_LINK_HOPS) throw invalidArg(`${what} '${display}' has too many levels of symbolic links`);
    const target = await readlink(next);
    if (isAbsolute(target)) {
      // An absolute target may only name a place under the root's real path (a snapshot: its cache entry).
      if (!isInside(scope, target)) throw escape();
      current = scope;
      pending.unshift(...components(target.slice(scope.length)));
    } else {
      pending.unshift(...components(target));
    }
  }
  return { path: current, display, exists: true };
}

/** confinedPath() for a file that must exist: INVALID_ARG `<what> '<display>' not found` when it does not. */
export async function existingConfinedFile(root: ConfinementRoot, relative: string, what: string): Promise<ConfinedPath> {
  const found = await confinedPath(root, relative, what);
  if (!found.exists) throw invalidArg(`${what} '${found.display}' not found`);
  return found;
}

/**
 * `message` with each absolute path replaced by its display name, longest first. Library errors
 * (onnxruntime's "Load model from <path> failed") quote the paths they were given.
 */
export function redactPaths(message: string, names: readonly (readonly [absolute: string, display: string])[]): string {
  return [...names]
    .filter(([absolute]) => absolute.length > 1)
    .sort((a, b) => b[0].length - a[0].length)
    .reduce((text, [absolute, display]) => text.split(absolute).join(display), message);
}
