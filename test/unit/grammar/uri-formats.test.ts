// `format: uri` and `uri-reference` as RFC 3986's ABNF (string-formats.ts) against ajv-formats'
// full mode: RFC 3986's own examples and hand-picked edge cases, labelled by ajv, and random
// strings over URI characters, where every string the grammar accepts must be one ajv accepts
// (the grammar may write fewer: ajv also takes a few non-RFC forms, such as "a://u@@").
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { layoutJson, SchemaUnsupported, schemaGrammar } from '../../../src/grammar/schema-grammar.js';
import { loadXGrammar } from '../../../src/grammar/xgrammar-module.js';
import { expectGrammarAgreesWithAjv } from '../../support/schema-refusals.js';

const xgrammar = loadXGrammar();
const ajv = new Ajv2020({ strict: false });
addFormats.default(ajv);

type Grammar = Awaited<ReturnType<typeof xgrammar.api.Grammar.fromEBNF>>;

const VALID_URIS = [
  'ftp://ftp.is.co.za/rfc/rfc1808.txt',
  'http://www.ietf.org/rfc/rfc2396.txt',
  'ldap://[2001:db8::7]/c=GB?objectClass?one',
  'mailto:John.Doe@example.com',
  'news:comp.infosystems.www.servers.unix',
  'tel:+1-816-555-1212',
  'telnet://192.0.2.16:80/',
  'urn:oasis:names:specification:docbook:dtd:xml:4.1.2',
  'HTTPS://User:Pw@Example.COM:8443/a/b%2Fc;p?q=1&r=%7E#Frag/?',
  'foo://[v7.abc:def]/',
  'a://',
  'a:/',
  's+ch-e.me:rootless/path',
];
const INVALID_URIS = ['', 'a', '//host/path', '1a:b', 'a:?q', 'a:#f', 'http://exa mple.com', 'http://a/%zz', 'http://a/b?x=[1]', 'http://[::1', 'http://a/^', 'http://a/{x}', 'a:b\\c', 'http://é.com'];
const VALID_REFERENCES = ['', '#f', '?q', '.', '../a/b', '//host', '/abs/path', 'a:', 'rel/a:b', 'g;x?y#s', 'http://a/b/c/d;p?q', '%41b'];
const INVALID_REFERENCES = ['a b', '#f#g', 'http://a/%g0', '[x]', 'http://[::1]]', 'é'];

/** Strings over URI characters and fragments of URIs, from a fixed seed. */
function randomStrings(count: number): string[] {
  const pieces = [
    'a',
    'Z',
    '0',
    '9',
    ':',
    '/',
    '//',
    '?',
    '#',
    '@',
    '[',
    ']',
    '%',
    '%2F',
    '%4g',
    '.',
    '-',
    '+',
    '~',
    '!',
    "'",
    ',',
    ';',
    '=',
    ' ',
    '"',
    '\\',
    'é',
    '::',
    '::1',
    'v1.x',
    '1.2.3.4',
    'http:',
    '|',
    'g:h',
  ];
  const starts = ['', 'http://', 'a:', 'urn:x:', '//', '/', 'x-y+z.1:', 'http://[', 'h://u@'];
  let seed = 37;
  const next = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return Math.floor((seed / 2147483648) * n);
  };
  return Array.from({ length: count }, () => {
    let s = starts[next(starts.length)]!;
    for (let i = next(7); i > 0; i--) s += pieces[next(pieces.length)]!;
    return s;
  });
}

describe.each([
  ['uri', VALID_URIS, INVALID_URIS],
  ['uri-reference', VALID_REFERENCES, INVALID_REFERENCES],
])('format %s', (format, valid, invalid) => {
  const schema = { type: 'string', format };
  const validate = ajv.compile(schema);
  let grammar: Grammar;
  const accepts = (value: string): Promise<boolean> => xgrammar.api.Testings.isGrammarAcceptString(grammar, layoutJson(value));
  beforeAll(async () => {
    grammar = await xgrammar.api.Grammar.fromEBNF(schemaGrammar(schema, { absentAdditionalProperties: 'forbid' }));
  });
  afterAll(() => grammar.dispose());

  it('accepts what RFC 3986 and ajv accept, refuses what ajv refuses', async () => {
    await expectGrammarAgreesWithAjv(validate, accepts, valid, invalid);
  });

  it('accepts no random string that ajv refuses', async () => {
    let accepted = 0;
    for (const value of randomStrings(150)) {
      if (!(await accepts(value))) continue;
      accepted++;
      expect(validate(value), `ajv accepts ${JSON.stringify(value)}, which the grammar accepts`).toBe(true);
    }
    // The sample reaches accepted strings, so the check above has teeth.
    expect(accepted).toBeGreaterThan(10);
  });
});

it('iri and iri-reference are refused by name (their non-ASCII ranges are not written exactly)', () => {
  for (const format of ['iri', 'iri-reference']) {
    expect(() => schemaGrammar({ type: 'string', format }, { absentAdditionalProperties: 'forbid' })).toThrow(SchemaUnsupported);
    expect(() => schemaGrammar({ type: 'string', format }, { absentAdditionalProperties: 'forbid' })).toThrow(`format "${format}" is not enforced`);
  }
});
