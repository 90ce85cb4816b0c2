// `array` schemas: prefixItems (or draft 4–7 tuple `items`), the items after them, minItems and
// maxItems, each count written out; uniqueItems where more than one item may appear through
// unique-items.ts (items from small finite sets) or refused there by name. Pure.

import { type Json, pointer, type SchemaObject } from './schema-model.js';
import type { Translation } from './translation.js';
import { uniqueArray } from './unique-items.js';

export function arraySchema(t: Translation, node: SchemaObject, path: string): string | null {
  const minItems = typeof node['minItems'] === 'number' ? node['minItems'] : 0;
  const maxItems = typeof node['maxItems'] === 'number' ? node['maxItems'] : null;
  let prefix: Json[] = [];
  let tail: Json = true;
  let tailPath = pointer(path, 'items');
  if (Array.isArray(node['prefixItems'])) {
    prefix = node['prefixItems'];
    tail = node['items'] ?? true;
  } else if (Array.isArray(node['items'])) {
    prefix = node['items'];
    tail = node['additionalItems'] ?? true;
    tailPath = pointer(path, 'additionalItems');
  } else tail = node['items'] ?? true;
  const prefixPath = pointer(path, Array.isArray(node['prefixItems']) ? 'prefixItems' : 'items');
  // At most one item is unique by itself; more must differ pairwise.
  // Where the guard compares the (string) items as they close, the grammar writes the array as if items could repeat.
  if (node['uniqueItems'] === true && (maxItems === null || maxItems > 1) && !t.uniqueGuarded) return uniqueArray(t, { prefix, prefixPath, tail, tailPath, minItems, maxItems }, path);
  const prefixBodies: string[] = [];
  for (const [i, item] of prefix.entries()) {
    const body = t.schemaBeneath(item, pointer(prefixPath, i), { item: i });
    if (body === null) break;
    prefixBodies.push(body);
  }
  // A prefix item allowing no value caps the array before it.
  const cap = prefixBodies.length < prefix.length ? prefixBodies.length : null;
  const tailBody = cap !== null ? null : t.schemaBeneath(tail, tailPath, { item: null });
  const max = [maxItems, cap, tailBody === null ? prefixBodies.length : null].filter((m): m is number => m !== null).reduce((a, b) => Math.min(a, b), Number.POSITIVE_INFINITY);
  if (minItems > max) return null;
  const options: string[] = [];
  for (let count = minItems; count <= Math.min(prefixBodies.length, max); count++) options.push(count === 0 ? '"[" "]"' : `"[" ${prefixBodies.slice(0, count).join(' ", " ')} "]"`);
  if (tailBody !== null && max > prefixBodies.length) {
    const fewest = Math.max(1, minItems - prefixBodies.length);
    const most = Number.isFinite(max) ? max - prefixBodies.length : null;
    const head = prefixBodies.length > 0 ? `${prefixBodies.join(' ", " ')} ", " ` : '';
    const more = most === null ? (fewest === 1 ? '*' : `{${fewest - 1},}`) : most === 1 ? null : `{${fewest - 1},${most - 1}}`;
    options.push(`"[" ${head}${tailBody}${more === null ? '' : ` (", " ${tailBody})${more}`} "]"`);
  }
  if (options.length === 0) return null;
  return t.rules.share('array', options.join(' | '));
}
