// Key material from flags and key files. A key file holds one key per line; blank lines and
// lines starting with '#' are skipped, so operators can annotate and rotate keys in place.

/** Why `key` cannot be a key, or undefined when it can. */
export function keyProblem(key: string): string | undefined {
  if (key.length === 0) return 'is empty';
  // The Authorization header's token ends at whitespace: such a key could never be presented.
  if (/\s/.test(key)) return 'contains whitespace';
  return undefined;
}

export class KeyFileError extends Error {}

/** The keys in a key file's text, in file order. `source` names the file in errors (line numbers are 1-based). */
export function parseKeyFile(text: string, source: string): string[] {
  const keys: string[] = [];
  text.split(/\r?\n/).forEach((raw, index) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const problem = keyProblem(line);
    if (problem) throw new KeyFileError(`${source} line ${index + 1}: the key ${problem}`);
    keys.push(line);
  });
  // An empty file would silently turn authentication off: refuse it instead.
  if (keys.length === 0) throw new KeyFileError(`${source} holds no keys`);
  return keys;
}
