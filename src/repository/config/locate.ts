// Source positions for config errors. Every message a user sees names the file, line and column
// (`config.pbtxt:12:5: …`), so positions travel from the tokenizer through the AST into a side
// table keyed by the decoded objects, where validation finds them again.
import { ConveyorError, type ErrorCode } from '../../errors.js';

/** 1-based line and column (column counts UTF-16 code units, a tab counts as one). */
export interface Pos {
  readonly line: number;
  readonly column: number;
}

export const formatPos = (pos: Pos): string => `${pos.line}:${pos.column}`;

export function configError(label: string, pos: Pos | undefined, message: string, code: ErrorCode = 'INVALID_ARG'): ConveyorError {
  return new ConveyorError(code, pos ? `${label}:${formatPos(pos)}: ${message}` : `${label}: ${message}`);
}

/**
 * Where each decoded field came from: for a decoded message object, `field` → position of the
 * field, `field.i` → position of element i of a repeated field, `field.key` → a map entry.
 */
export class SourcePositions {
  private readonly byObject = new WeakMap<object, Map<string, Pos>>();

  set(owner: object, key: string, pos: Pos): void {
    let table = this.byObject.get(owner);
    if (!table) this.byObject.set(owner, (table = new Map()));
    if (!table.has(key)) table.set(key, pos);
  }

  get(owner: object, key: string): Pos | undefined {
    return this.byObject.get(owner)?.get(key);
  }
}

/**
 * Raises errors against a config's source. Without positions (a config built in memory, or one
 * changed after parsing) messages carry only the label.
 */
export class Locator {
  constructor(
    readonly label: string,
    private readonly positions?: SourcePositions,
  ) {}

  pos(owner: object, key: string): Pos | undefined {
    return this.positions?.get(owner, key);
  }

  /** Position of `key` in `owner`, falling back to the first of `fallbacks` that has one. */
  posOr(owner: object, key: string, ...fallbacks: [object, string][]): Pos | undefined {
    const own = this.pos(owner, key);
    if (own) return own;
    for (const [o, k] of fallbacks) {
      const pos = this.pos(o, k);
      if (pos) return pos;
    }
    return undefined;
  }

  fail(owner: object, key: string, message: string, code: ErrorCode = 'INVALID_ARG'): never {
    throw configError(this.label, this.pos(owner, key), message, code);
  }

  failAt(pos: Pos | undefined, message: string, code: ErrorCode = 'INVALID_ARG'): never {
    throw configError(this.label, pos, message, code);
  }
}
