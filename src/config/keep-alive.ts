// Ollama's keep_alive durations, read the same way for the --keep-alive flag, a model's keep_alive
// parameter and a request's keep_alive field: a number of seconds, or a duration string ("5m",
// "1h30m", "90s", "0"); any negative value means forever.

/** Milliseconds a model stays loaded after its last request; FOREVER never unloads it; 0 unloads it as soon as it is idle. */
export type KeepAliveMs = number;
export const FOREVER: KeepAliveMs = Number.POSITIVE_INFINITY;

/** Ollama's default. */
export const DEFAULT_KEEP_ALIVE = '5m';

const UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** The duration `value` means, or undefined when it is not one (the caller names the field in its error). */
export function readKeepAlive(value: unknown): KeepAliveMs | undefined {
  if (typeof value === 'number' && Number.isFinite(value)) return value < 0 ? FOREVER : value * 1000;
  if (typeof value !== 'string') return undefined;
  const text = value.trim();
  if (/^-?\d+(\.\d+)?$/.test(text)) return readKeepAlive(Number(text));
  if (text.startsWith('-')) return durationMs(text.slice(1)) === undefined ? undefined : FOREVER;
  return durationMs(text);
}

/** "1h30m" → 5,400,000; undefined unless the whole text is number+unit pairs. */
function durationMs(text: string): number | undefined {
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== text) return undefined;
  return parts.reduce((sum, p) => sum + Number(p[1]) * UNIT_MS[p[2]!]!, 0);
}

export const KEEP_ALIVE_FORMS = 'a duration such as "5m", "30s" or "1h", or a number of seconds (0 unloads after the request, -1 keeps the model loaded)';
