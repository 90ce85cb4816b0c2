// Reading Python call syntax, `get_weather(city="Paris", days=3)`, as models write it for
// pythonic tool calls (Llama 3.2 / 4, Gemma's tool_code): keyword arguments whose values are
// Python literals (strings, numbers, True / False / None, lists, tuples, dicts), turned into a
// call whose arguments are JSON text as Python's json.dumps writes it (`{"city": "Paris"}`), which
// is what vLLM's pythonic parser sends. Text that may still grow reads as incomplete, not as
// malformed: the caller holds it.

import type { ParsedToolCall } from '../contracts/tools.js';
import { setOwnEntry } from '../contracts/own-entry.js';

/** The text ended inside the construct: more text may complete it. */
class Incomplete extends Error {}
/** The text is not Python call syntax at this point, however it continues. */
class Malformed extends Error {}

export type CallRead = { readonly kind: 'call'; readonly call: ParsedToolCall; readonly end: number } | { readonly kind: 'incomplete' } | { readonly kind: 'malformed' };

const NAME_START = /[A-Za-z_]/;
const NAME_CHAR = /[A-Za-z0-9_.]/;
const JSON_NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;

/** One call at `pos` (leading whitespace skipped): the call and the index after its `)`. */
export function readPythonCall(text: string, pos: number): CallRead {
  const reader = new Reader(text);
  try {
    reader.pos = pos;
    const call = reader.call();
    return { kind: 'call', call, end: reader.pos };
  } catch (error) {
    if (error instanceof Incomplete) return { kind: 'incomplete' };
    if (error instanceof Malformed) return { kind: 'malformed' };
    throw error;
  }
}

/** JSON as Python's json.dumps(..., ensure_ascii=False) writes it, as vLLM sends pythonic arguments: `, ` and `: ` separators. */
export function pythonJson(value: unknown): string {
  if (value instanceof PythonNumber) return value.text;
  if (Array.isArray(value)) return `[${value.map(pythonJson).join(', ')}]`;
  if (typeof value === 'object' && value !== null) {
    return `{${Object.entries(value)
      .map(([k, v]) => `${pythonJson(k)}: ${pythonJson(v)}`)
      .join(', ')}}`;
  }
  return JSON.stringify(value);
}

/** A number as written (1.0 stays 1.0, as json.dumps writes a Python float). */
class PythonNumber {
  constructor(readonly text: string) {}
}

class Reader {
  pos = 0;
  constructor(private readonly text: string) {}

  private peek(): string {
    if (this.pos >= this.text.length) throw new Incomplete();
    return this.text[this.pos]!;
  }

  private skip(): void {
    while (this.pos < this.text.length && /\s/.test(this.text[this.pos]!)) this.pos++;
  }

  private expect(c: string): void {
    this.skip();
    if (this.peek() !== c) throw new Malformed();
    this.pos++;
  }

  private name(): string {
    this.skip();
    const start = this.pos;
    if (!NAME_START.test(this.peek())) throw new Malformed();
    while (this.pos < this.text.length && NAME_CHAR.test(this.text[this.pos]!)) this.pos++;
    if (this.pos >= this.text.length) throw new Incomplete();
    return this.text.slice(start, this.pos);
  }

  call(): ParsedToolCall {
    const name = this.name();
    this.expect('(');
    const args: Record<string, unknown> = {};
    this.skip();
    while (this.peek() !== ')') {
      const key = this.name();
      this.expect('=');
      setOwnEntry(args, key, this.value());
      this.skip();
      if (this.peek() === ',') {
        this.pos++;
        this.skip();
      } else if (this.peek() !== ')') throw new Malformed();
    }
    this.pos++;
    return { name, arguments: pythonJson(args) };
  }

  private value(): unknown {
    this.skip();
    const c = this.peek();
    if (c === '"' || c === "'") return this.string(c);
    if (c === '[' || c === '(') return this.sequence(c === '[' ? ']' : ')');
    if (c === '{') return this.dict();
    if (/[-+\d.]/.test(c)) return this.number();
    const word = this.name();
    if (word === 'True') return true;
    if (word === 'False') return false;
    if (word === 'None') return null;
    throw new Malformed();
  }

  private string(quote: string): string {
    this.pos++;
    let out = '';
    while (true) {
      const c = this.peek();
      this.pos++;
      if (c === quote) return out;
      if (c === '\n') throw new Malformed();
      if (c !== '\\') {
        out += c;
        continue;
      }
      const e = this.peek();
      this.pos++;
      const simple: Record<string, string> = { n: '\n', t: '\t', r: '\r', '\\': '\\', "'": "'", '"': '"', '0': '\0', b: '\b', f: '\f' };
      if (e in simple) out += simple[e];
      else if (e === 'x' || e === 'u') {
        const width = e === 'x' ? 2 : 4;
        if (this.pos + width > this.text.length) throw new Incomplete();
        const hex = this.text.slice(this.pos, this.pos + width);
        if (!/^[0-9a-fA-F]+$/.test(hex)) throw new Malformed();
        out += String.fromCharCode(Number.parseInt(hex, 16));
        this.pos += width;
      } else out += `\\${e}`;
    }
  }

  private number(): PythonNumber {
    const start = this.pos;
    while (this.pos < this.text.length && /[-+\w.]/.test(this.text[this.pos]!)) this.pos++;
    if (this.pos >= this.text.length) throw new Incomplete();
    const raw = this.text.slice(start, this.pos);
    if (JSON_NUMBER.test(raw)) return new PythonNumber(raw);
    const value = Number(raw.replaceAll('_', ''));
    if (!Number.isFinite(value)) throw new Malformed();
    return new PythonNumber(String(value));
  }

  private sequence(close: string): unknown[] {
    this.pos++;
    const items: unknown[] = [];
    this.skip();
    while (this.peek() !== close) {
      items.push(this.value());
      this.skip();
      if (this.peek() === ',') {
        this.pos++;
        this.skip();
      } else if (this.peek() !== close) throw new Malformed();
    }
    this.pos++;
    return items;
  }

  private dict(): Record<string, unknown> {
    this.pos++;
    const out: Record<string, unknown> = {};
    this.skip();
    while (this.peek() !== '}') {
      const key = this.value();
      if (typeof key !== 'string') throw new Malformed();
      this.expect(':');
      setOwnEntry(out, key, this.value());
      this.skip();
      if (this.peek() === ',') {
        this.pos++;
        this.skip();
      } else if (this.peek() !== '}') throw new Malformed();
    }
    this.pos++;
    return out;
  }
}
