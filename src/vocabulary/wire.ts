// How a front end maps its wire names onto the declared vocabulary. A protocol states only where
// it differs: the declared fields it does not carry, and its aliases (another name for a declared
// field, taking that field's place when present). Everything else passes under its own name.

import { GENERATION_FIELDS, type GenerationField } from './declaration.js';
import type { UncheckedParams, WireNames } from './parse.js';

export interface WireVocabulary {
  /** Declared fields this protocol does not take: refused like any name it does not know. */
  readonly omit?: readonly GenerationField[];
  /** Wire name → the declared field it carries; wins over the declared name when both are sent. */
  readonly aliases?: Readonly<Record<string, GenerationField>>;
}

/** What a front end hands the input processor: the parameters, and its names for errors. */
export interface WireParams {
  readonly sampling: UncheckedParams;
  readonly wireNames: WireNames;
}

const present = (value: unknown): boolean => value !== undefined && value !== null;

/** The declared fields the protocol carries under their own names. */
export function carriedFields(vocabulary: WireVocabulary): GenerationField[] {
  return GENERATION_FIELDS.filter((field) => !vocabulary.omit?.includes(field));
}

/** Every wire name the protocol accepts for generation parameters. */
export function wireFieldNames(vocabulary: WireVocabulary): string[] {
  return [...carriedFields(vocabulary), ...Object.keys(vocabulary.aliases ?? {})];
}

/** The generation parameters of a request body, by declared name; values are checked later, by the input processor. */
export function readWireParams(body: Readonly<Record<string, unknown>>, vocabulary: WireVocabulary): WireParams {
  const params: { [F in GenerationField]?: unknown } = {};
  const wireNames: { [F in GenerationField]?: string } = {};
  for (const field of carriedFields(vocabulary)) if (Object.hasOwn(body, field) && body[field] !== undefined) params[field] = body[field];
  for (const [alias, field] of Object.entries(vocabulary.aliases ?? {})) {
    if (!Object.hasOwn(body, alias) || !present(body[alias])) continue;
    params[field] = body[alias];
    wireNames[field] = alias;
  }
  return { sampling: params, wireNames };
}
