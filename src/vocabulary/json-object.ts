// The one test every request reader uses before it reads a field: a JSON object, neither null
// nor an array. `T` types its values where the caller knows them (parsed JSON Schema nodes).

export function isObject<T = unknown>(value: unknown): value is Record<string, T> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
