// proto3 rules the decoder and the JSON printer share: a field's JSON name and the value an
// unset field reads as. The message shapes themselves are declared in src/contracts/.
import type { EnumType, ScalarType } from '../../contracts/proto-schema.js';

/** proto3 JSON name of a field: lowerCamelCase of the proto name. */
export const jsonName = (name: string): string => name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());

/** Default of a scalar or enum field in proto3 (what an unset field reads as). */
export function defaultValue(type: ScalarType | EnumType): string | number | boolean {
  if (typeof type !== 'string') return type.values[0]!;
  if (type === 'string') return '';
  if (type === 'bool') return false;
  return 0;
}
