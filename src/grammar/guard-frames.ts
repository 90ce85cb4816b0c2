// The JSON nesting the string guard (string-guard.ts) follows: one frame per open array or
// object, which item or key is being read, the items seen where they must differ, and in an
// object written in any key order (json-schema/any-order.ts) the keys written and which of the
// place's object schemas are still alive. Each step makes new frames (the cursor keeps old ones
// for rollback) or null where the byte or string breaks a rule. Pure.

import { canComplete, isComplete, type ObjectKeyRule } from './json-schema/any-order.js';
import { decodedText, NO_STATE, wholeCharacters } from './json-schema/key-language.js';
import { type GuardPlace, type GuardPlan, placeBeneath, ROOT, UNBOUNDED } from './json-schema/guard-places.js';

/** An open array or object: its place in the plan, and the item index or the key being read. */
export interface Frame {
  readonly place: number;
  readonly array: boolean;
  /** An array whose string items must differ, and the ones closed so far. */
  readonly unique: boolean;
  readonly seen: readonly string[];
  readonly index: number;
  /** The current key (decoded); null before it is read. */
  readonly key: string | null;
  /** True between `{` or `,` and a key's closing quote. */
  readonly expectKey: boolean;
  /** An object written in any key order (its rules: keyRules): the keys written so far; null elsewhere. */
  readonly used: readonly string[] | null;
  /** Which of those rules (one per object schema at its place, as bits) the keys and values so far still meet. */
  readonly alive: number;
}

/**
 * The frames after a byte outside strings: `{` / `[` open a frame, `}` / `]` close one (an object
 * in any order only once an alive rule's required keys are written), `,` moves to the next item or
 * key (in an object in any order only while a key is left to write); null where it breaks a rule.
 */
export function framesAfterStructure(plan: GuardPlan, frames: readonly Frame[], byte: number): readonly Frame[] | null {
  const frame = frames.at(-1);
  if (byte === 0x7b || byte === 0x5b) {
    const place = valuePlace(plan, frames);
    const array = byte === 0x5b;
    const rules = array ? null : keyRules(plan, place);
    const used = rules === null ? null : [];
    const alive = rules === null ? 0 : (1 << rules.length) - 1;
    return [...frames, { place, array, unique: array && plan.places[place]!.unique, seen: [], index: 0, key: null, expectKey: !array, used, alive }];
  }
  if (byte === 0x7d || byte === 0x5d) {
    if (frame?.used && !someAlive(plan, frame, (rule) => isComplete(rule, frame.used!))) return null;
    return frames.slice(0, -1);
  }
  if (byte !== 0x2c || frame === undefined) return frames;
  if (frame.used && !someAlive(plan, frame, (rule) => canAddKey(rule, frame.used!))) return null;
  return [...frames.slice(0, -1), frame.array ? { ...frame, index: frame.index + 1 } : { ...frame, key: null, expectKey: true }];
}

/**
 * The frames after a string closes: a key read into its object's frame; an item of an array whose
 * items must differ added to the ones seen, or null where it repeats one.
 */
export function framesAfterString(plan: GuardPlan, frames: readonly Frame[], isKey: boolean, text: readonly number[] | null): readonly Frame[] | null {
  const frame = frames.at(-1);
  if (frame === undefined || (!isKey && text === null)) return frames;
  const decoded = text === null ? null : decodedText(text);
  if (isKey && frame.used !== null) {
    // An object in any order: no key twice, and only keys some object schema still alive allows.
    if (decoded === null || frame.used.includes(decoded)) return null;
    const alive = aliveWhere(plan, frame, (rule) => {
      const named = rule.names.includes(decoded);
      return (named || (!rule.closed && (rule.keyLanguage?.matches(decoded) ?? true))) && canComplete(rule, frame.used!, named ? decoded : null);
    });
    if (alive === 0) return null;
    return [...frames.slice(0, -1), { ...frame, key: decoded, expectKey: false, used: [...frame.used, decoded], alive }];
  }
  const discriminator = frame.array ? undefined : plan.places[frame.place]!.discriminator;
  if (!isKey && discriminator !== undefined && frame.key === discriminator.key) {
    // The value that tells the alternatives apart: from here the object is at its alternative's place.
    return [...frames.slice(0, -1), { ...frame, place: (decoded === null ? undefined : discriminator.places.get(decoded)) ?? UNBOUNDED }];
  }
  if (!frame.array && frame.used !== null) {
    // A value that tells object schemas apart: those whose constants for the key exclude it are no longer alive.
    const key = frame.key!;
    const alive = aliveWhere(plan, frame, (rule) => decoded !== null && (rule.constants.get(key)?.includes(decoded) ?? true));
    return alive === 0 ? null : [...frames.slice(0, -1), { ...frame, alive }];
  }
  if (isKey) return [...frames.slice(0, -1), { ...frame, key: decoded, expectKey: false }];
  if (decoded === null || frame.seen.includes(decoded)) return null;
  return [...frames.slice(0, -1), { ...frame, seen: [...frame.seen, decoded] }];
}

/**
 * The keys rules of the objects in any order at a place (one per object schema there), as the
 * translation wrote them; null where the grammar keeps the schema's order there (no such object,
 * or one the translation wrote merged with others, in order). Memoized per plan: asked at every
 * structural byte and key byte, and complete once the translation that filled objectKeys is done.
 */
function keyRules(plan: GuardPlan, place: number): readonly ObjectKeyRule[] | null {
  let byPlace = keyRulesMemo.get(plan);
  if (byPlace === undefined) keyRulesMemo.set(plan, (byPlace = new Map()));
  let rules = byPlace.get(place);
  if (rules === undefined) {
    const found = plan.places[place]!.objectNodes.map((node) => plan.objectKeys.get(node));
    rules = found.length > 0 && found.every((rule) => rule !== undefined) ? (found as ObjectKeyRule[]) : null;
    byPlace.set(place, rules);
  }
  return rules;
}
const keyRulesMemo = new WeakMap<GuardPlan, Map<number, readonly ObjectKeyRule[] | null>>();

/** The frame's alive rules that meet `test`, as bits. */
function aliveWhere(plan: GuardPlan, frame: Frame, test: (rule: ObjectKeyRule) => boolean): number {
  let alive = 0;
  const rules = keyRules(plan, frame.place)!;
  for (const [i, rule] of rules.entries()) if (frame.alive & (1 << i) && test(rule)) alive |= 1 << i;
  return alive;
}

const someAlive = (plan: GuardPlan, frame: Frame, test: (rule: ObjectKeyRule) => boolean): boolean => aliveWhere(plan, frame, test) !== 0;

/** Whether another key can follow `,`: a named one not yet written, or an unnamed one, after which the object can still be completed. */
const canAddKey = (rule: ObjectKeyRule, used: readonly string[]): boolean =>
  (unnamedKeyLeft(rule, used, []) && canComplete(rule, used, null)) || rule.names.some((name) => !used.includes(name) && canComplete(rule, used, name));

/**
 * Whether a key whose raw text begins with `text` can still end as an unnamed key of the rule not
 * yet written: any key where nothing limits them; beside patternProperties, one of the patterns'
 * keys — always, where infinitely many begin so; else only while more begin so than the named and
 * written keys among them (the grammar spells named keys as their own members).
 */
function unnamedKeyLeft(rule: ObjectKeyRule, used: readonly string[], text: readonly number[]): boolean {
  if (rule.closed) return false;
  const language = rule.keyLanguage;
  if (language === null) return true;
  const left = language.keysLeft(language.stateAfter(text));
  if (left === Number.POSITIVE_INFINITY) return true;
  const begun = wholeCharacters(text);
  const taken = new Set([...rule.names, ...used].filter((key) => key.startsWith(begun) && language.matches(key)));
  return left > taken.size;
}

/** Whether the value about to start tells object schemas apart: a discriminator's (GuardPlace.discriminator), or in an object in any order one whose string constants do. */
export function discriminates(plan: GuardPlan, frame: Frame): boolean {
  if (frame.array || frame.key === null) return false;
  if (plan.places[frame.place]!.discriminator?.key === frame.key) return true;
  return frame.used !== null && someAlive(plan, frame, (rule) => rule.constants.has(frame.key!));
}

/** Whether a key begun in an object in any order can still end: unless a schema still alive allows other keys, its text so far begins a named key not yet written. */
export function keyCanGoOn(plan: GuardPlan, frame: Frame, text: readonly number[]): boolean {
  if (frame.used === null) return true;
  return someAlive(
    plan,
    frame,
    (rule) =>
      (unnamedKeyLeft(rule, frame.used!, text) && canComplete(rule, frame.used!, null)) ||
      rule.rawNames.some((raw, i) => begins(raw, text) && !frame.used!.includes(rule.names[i]!) && canComplete(rule, frame.used!, rule.names[i]!)),
  );
}

const begins = (raw: Uint8Array, text: readonly number[]): boolean => raw.length >= text.length && text.every((byte, j) => raw[j] === byte);

/** The place of the value that starts next: the document, the current item, or the current key's value. */
export function valuePlace(plan: GuardPlan, frames: readonly Frame[]): number {
  const frame = frames.at(-1);
  if (frame === undefined) return ROOT;
  const place = plan.places[frame.place]!;
  if (frame.array) return placeBeneath(place, { item: frame.index });
  if (frame.key === null) return place.otherKeys;
  return keyPlace(plan.places[narrowedPlace(plan, frame) ?? frame.place]!, frame.key);
}

/** The place of a key's value: named, else by the patternProperties patterns it matches, else any other key's. */
function keyPlace(place: GuardPlace, key: string): number {
  const beneath = placeBeneath(place, { key });
  if (beneath !== null) return beneath;
  // Left to the patterns (placeBeneath does so only where the place has them): the key's text tells which it matches.
  const { tests, places } = place.patternKeys!;
  let bits = 0;
  for (const [i, test] of tests.entries()) if (test.test(key)) bits |= 1 << i;
  return places[bits]!;
}

/** After the value of the key that tells its objects apart (GuardPlace.narrowing), the place of the one object still alive; null before it, or where none narrows. */
function narrowedPlace(plan: GuardPlan, frame: Frame): number | null {
  const narrowing = plan.places[frame.place]!.narrowing;
  if (narrowing === undefined || frame.used === null || frame.key === narrowing.key || !frame.used.includes(narrowing.key)) return null;
  // The key's constants differ in each object, so its value left one alive.
  const alone = 31 - Math.clz32(frame.alive);
  return frame.alive === 1 << alone ? narrowing.places[alone]! : null;
}

/**
 * In a key begun in an object in any order (its raw text so far), which of the tokens the grammar
 * allows could leave it unable to end, and so must be followed: none where a schema still alive
 * takes any key; every one where the key must end as a named key, or could go on into pattern
 * keys of which there are finitely many; else, where whatever follows the text still begins
 * infinitely many pattern keys, only the tokens that spell on into a named key outside the
 * patterns' language (the rest of each such name, listed).
 */
export function keyTokensToFollow(plan: GuardPlan, frame: Frame, text: readonly number[]): 'none' | 'all' | readonly Uint8Array[] {
  if (frame.used === null) return 'none';
  const rules = keyRules(plan, frame.place)!.filter((_, i) => frame.alive & (1 << i));
  if (rules.some((rule) => !rule.closed && rule.keyLanguage === null)) return 'none';
  const rests: Uint8Array[] = [];
  for (const rule of rules) {
    const language = rule.keyLanguage;
    if (language === null || !language.endless(language.stateAfter(text))) return 'all';
    for (const raw of rule.rawNames) if (begins(raw, text) && language.stateAfter(raw) === NO_STATE) rests.push(raw.subarray(text.length));
  }
  return rests;
}
