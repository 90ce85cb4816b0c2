// Every relative link in the repository's Markdown resolves: the file (or folder) it names exists, and a
// `#fragment` into a Markdown file names one of its headings (GitHub's anchors). The README is the front
// door and must stay small (issue 34: ≤ 12 KB), so its size is checked here too.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, sep } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const SKIP_DIRS = new Set(['node_modules', '.git', 'dist', 'coverage', 'build', '.vitest-cache']);

/** Files git would commit (tracked, or untracked and not ignored); a walk of the tree where git is absent. */
function repositoryFiles(): string[] {
  try {
    const out = execFileSync('git', ['ls-files', '-co', '--exclude-standard', '-z'], { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 << 20 });
    return out
      .split('\0')
      .filter((f) => f !== '')
      .map((f) => f.split('/').join(sep))
      .filter((f) => existsSync(join(ROOT, f)));
  } catch {
    const walk = (dir: string): string[] =>
      readdirSync(join(ROOT, dir)).flatMap((name) => {
        if (SKIP_DIRS.has(name)) return [];
        const path = join(dir, name);
        return statSync(join(ROOT, path)).isDirectory() ? walk(path) : [path];
      });
    return walk('');
  }
}

/** The text outside fenced code blocks and inline code spans, line numbers kept. */
function proseLines(text: string): string[] {
  let fenced = false;
  return text.split('\n').map((line) => {
    if (/^\s*(```|~~~)/.test(line)) {
      fenced = !fenced;
      return '';
    }
    return fenced ? '' : line.replace(/`[^`]*`/g, '``');
  });
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to dashes. */
function slug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '')
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '').replace(/ /g, '-');
}

/** Every anchor a Markdown file offers: its headings' slugs (repeats numbered as GitHub does), and explicit ids. */
function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  let fenced = false;
  for (const line of text.split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    if (fenced) continue;
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading) {
      const base = slug(heading[1]!);
      const n = seen.get(base) ?? 0;
      seen.set(base, n + 1);
      out.add(n === 0 ? base : `${base}-${n}`);
    }
    for (const id of line.matchAll(/<a\s+(?:name|id)="([^"]+)"/g)) out.add(id[1]!);
  }
  return out;
}

/** Every folder above a file: a/b/c.md → a, a/b. */
function parentDirs(file: string): string[] {
  const parts = file.split(sep).slice(0, -1);
  return parts.map((_, i) => parts.slice(0, i + 1).join(sep));
}

interface Link {
  readonly file: string;
  readonly line: number;
  readonly target: string;
}

function links(file: string, text: string): Link[] {
  const found: Link[] = [];
  proseLines(text).forEach((line, i) => {
    for (const m of line.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) found.push({ file, line: i + 1, target: m[1]! });
    const reference = /^\s{0,3}\[[^\]]+\]:\s+<?(\S+?)>?(?:\s+"[^"]*")?\s*$/.exec(line);
    if (reference) found.push({ file, line: i + 1, target: reference[1]! });
  });
  return found;
}

/** Why a link does not resolve, or undefined when it does (external links are not followed). */
function broken(link: Link, files: ReadonlySet<string>, dirs: ReadonlySet<string>, anchorsOf: (file: string) => Set<string>): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(link.target)) return undefined;
  const [pathPart = '', fragment] = link.target.split('#', 2);
  let path: string;
  try {
    path = decodeURIComponent(pathPart.split('?')[0]!);
  } catch {
    return 'not a valid URL path';
  }
  const resolved = path === '' ? link.file : normalize(path.startsWith('/') ? path.slice(1) : join(dirname(link.file), path)).replace(/[\\/]+$/, '');
  if (resolved.startsWith('..')) return 'points outside the repository';
  if (!files.has(resolved) && !dirs.has(resolved) && resolved !== '.') return `${resolved} does not exist`;
  if (fragment !== undefined && fragment !== '' && resolved.endsWith('.md') && files.has(resolved)) {
    if (!anchorsOf(resolved).has(decodeURIComponent(fragment).toLowerCase())) return `${resolved} has no heading #${fragment}`;
  }
  return undefined;
}

describe('Markdown links', () => {
  const all = repositoryFiles();
  const files = new Set(all);
  const dirs = new Set(all.flatMap(parentDirs));
  const markdown = all.filter((f) => f.endsWith('.md') && !f.split(sep).some((part) => SKIP_DIRS.has(part)));
  const texts = new Map(markdown.map((f) => [f, readFileSync(join(ROOT, f), 'utf8')]));
  const anchorCache = new Map<string, Set<string>>();
  const anchorsOf = (file: string): Set<string> => {
    let found = anchorCache.get(file);
    if (!found) {
      found = anchors(texts.get(file) ?? readFileSync(join(ROOT, file), 'utf8'));
      anchorCache.set(file, found);
    }
    return found;
  };

  it('finds the Markdown files', () => {
    expect(markdown).toContain('README.md');
    expect(markdown).toContain(join('docs', 'architecture.md'));
    expect(links('README.md', texts.get('README.md')!).length).toBeGreaterThan(20);
  });

  it('slugs headings as GitHub does', () => {
    expect(slug('Models by name')).toBe('models-by-name');
    expect(slug('`conveyor convert`: a checkpoint to ONNX')).toBe('conveyor-convert-a-checkpoint-to-onnx');
    expect(slug('Shutdown and drain')).toBe('shutdown-and-drain');
    expect([...anchors('# A\n## A\n```\n# not a heading\n```\n')]).toEqual(['a', 'a-1']);
  });

  it('catches a broken link', () => {
    const check = (target: string) => broken({ file: 'README.md', line: 1, target }, files, dirs, anchorsOf);
    expect(check('docs/no-such-page.md')).toMatch(/does not exist/);
    expect(check('docs/architecture.md#no-such-heading')).toMatch(/no heading/);
    expect(check('docs/architecture.md')).toBeUndefined();
    expect(check('https://example.com/x.md')).toBeUndefined();
  });

  it('every relative link resolves to a file in the repository', () => {
    const problems = markdown.flatMap((file) =>
      links(file, texts.get(file)!).flatMap((link) => {
        const why = broken(link, files, dirs, anchorsOf);
        return why === undefined ? [] : [`${file}:${link.line}: (${link.target}) ${why}`];
      }),
    );
    expect(problems).toEqual([]);
  });

  it('keeps the README the front door: at most 12 KB', () => {
    expect(statSync(join(ROOT, 'README.md')).size).toBeLessThanOrEqual(12 * 1024);
  });
});
