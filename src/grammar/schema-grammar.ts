// A JSON Schema as an EBNF grammar for xgrammar to match tokens against: this server's own
// translation, so that what the schema says is what the grammar enforces. Every JSON document
// the grammar allows is valid under the schema (the property tests hold it to ajv); a keyword
// whose meaning the grammar cannot state exactly is refused with SchemaUnsupported naming it
// and the path to it, never dropped. Unknown keywords are ignored, as validators ignore them.
//
// Layout: one line, ", " between members and ": " after keys (what the engine has always
// produced). Objects list the named properties in the schema's order, each optional one
// skippable, then any further properties the schema allows. Strings hold no raw control
// character: the only escapes are JSON's. The translation lives in json-schema/ (one file per
// keyword family); this file is its front door. Pure.

import { type Json, type SchemaGrammarOptions, SchemaUnsupported } from './json-schema/schema-model.js';
import type { GuardPlan } from './json-schema/guard-places.js';
import { SchemaTranslator } from './json-schema/schema-translator.js';

export { layoutJson, type SchemaGrammarOptions, SchemaUnsupported } from './json-schema/schema-model.js';

/** The grammar (xgrammar EBNF, rooted at `root`) for the JSON documents a schema allows; SchemaUnsupported names what it cannot enforce. */
export function schemaGrammar(schema: unknown, options: SchemaGrammarOptions): string {
  return schemaGrammarPlan(schema, options).text;
}

/** The grammar, and the length plan the guard must follow beside it (with options.guardStrings; null: none). */
export function schemaGrammarPlan(schema: unknown, options: SchemaGrammarOptions): { readonly text: string; readonly guard: GuardPlan | null } {
  const translator = new SchemaTranslator(schema as Json, options);
  const root = translator.schema(schema as Json, '#');
  if (root === null) throw new SchemaUnsupported('schema', '#', 'allows no value');
  return { text: translator.rules.text(root), guard: translator.guardPlan };
}

/** Any JSON object (response_format json_object), in the same layout. */
export function jsonObjectGrammar(): string {
  return schemaGrammar({ type: 'object' }, { absentAdditionalProperties: 'allow' });
}
