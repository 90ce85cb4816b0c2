// A JSON Schema as one canonical text, so that equal schemas give equal text and the engine
// compiles each one once.

/**
 * Object keys sorted at every depth (array order kept: prefixItems, enum and required are
 * ordered), but for the members of each `properties`, which keep the order they were given:
 * that is the order the output writes its keys in (OpenAI's structured outputs promise it; a
 * schema lists `reasoning` before `answer` for a reason).
 */
export function canonicalSchemaJson(value: unknown): string {
  return schemaText(value, false);
}

function schemaText(value: unknown, keepOrder: boolean): string {
  if (Array.isArray(value)) return `[${value.map((item) => schemaText(item, false)).join(',')}]`;
  if (typeof value !== 'object' || value === null) return JSON.stringify(value);
  const record = value as Record<string, unknown>;
  const keys = keepOrder ? Object.keys(record) : Object.keys(record).sort();
  // Beneath `properties` are names (kept in order), and beneath each name a schema again.
  const entries = keys.map((k) => `${JSON.stringify(k)}:${schemaText(record[k], !keepOrder && k === 'properties')}`);
  return `{${entries.join(',')}}`;
}
