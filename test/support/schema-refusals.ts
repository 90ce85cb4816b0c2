// What the schema-translation tests assert again and again, said once: a schema refused by name
// (SchemaUnsupported with the keyword and the JSON pointer), and an instance list judged the
// same way by ajv and by the grammar.

import { expect } from 'vitest';
import { SchemaUnsupported, schemaGrammar } from '../../src/grammar/schema-grammar.js';

type Schema = Parameters<typeof schemaGrammar>[0];
type Mode = Parameters<typeof schemaGrammar>[1]['absentAdditionalProperties'];

/** `schema` is refused naming `keyword` at the JSON pointer `path`. */
export function expectRefused(schema: Schema, keyword: string, path: string, absentAdditionalProperties: Mode = 'forbid'): void {
  try {
    schemaGrammar(schema, { absentAdditionalProperties });
    expect.fail('translated');
  } catch (error) {
    expect(error).toBeInstanceOf(SchemaUnsupported);
    expect((error as SchemaUnsupported).keyword).toBe(keyword);
    expect((error as SchemaUnsupported).path).toBe(path);
  }
}

/** Every `valid` value passes ajv's `validate` and the grammar's `accepts`, every `invalid` one neither. */
export async function expectGrammarAgreesWithAjv(
  validate: (value: unknown) => boolean,
  accepts: (value: never) => Promise<boolean>,
  valid: readonly unknown[],
  invalid: readonly unknown[],
): Promise<void> {
  for (const value of valid) {
    expect(validate(value), `ajv: ${JSON.stringify(value)} valid`).toBe(true);
    expect(await accepts(value as never), `grammar accepts ${JSON.stringify(value)}`).toBe(true);
  }
  for (const value of invalid) {
    expect(validate(value), `ajv: ${JSON.stringify(value)} invalid`).toBe(false);
    expect(await accepts(value as never), `grammar refuses ${JSON.stringify(value)}`).toBe(false);
  }
}
