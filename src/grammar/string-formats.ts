// The string formats enforced, each as an anchored pattern over the string's content (translated
// by regex-grammar.ts like any pattern). Each accepts only strings ajv-formats' "full" mode
// accepts: dates check the days of each month and leap years, times and date-times carry a time
// zone, hostnames have at most three labels (so they stay under 253 characters, the limit ajv
// checks with a lookahead a grammar cannot state), URIs follow RFC 3986's ABNF. Pure data.
//
// A format no validator here knows is an annotation (draft 2019-09 and 2020-12: an unknown
// format MUST NOT fail validation; drafts 4-7 ignore it), so it constrains nothing. The formats
// the specification or ajv-formats define but the grammar does not enforce are listed by name
// and refused, never served as any string.

const YEAR = String.raw`\d{4}`;
const LEAP_YEAR = String.raw`(?:\d\d(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)`;
const MONTH_DAY = String.raw`(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\d|30)|02-(?:0[1-9]|1\d|2[0-8]))`;
const DATE = `(?:${YEAR}-${MONTH_DAY}|${LEAP_YEAR}-02-29)`;
const TIME = String.raw`(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d+)?(?:[zZ]|[+-](?:[01]\d|2[0-3]):[0-5]\d)`;
// RFC 3339 appendix A: units in order with none skipped (each may only be followed by the next one down).
const DURATION_TIME = String.raw`T(?:\d+H(?:\d+M(?:\d+S)?)?|\d+M(?:\d+S)?|\d+S)`;
const DURATION = String.raw`P(?:(?:\d+Y(?:\d+M(?:\d+D)?)?|\d+M(?:\d+D)?|\d+D)(?:${DURATION_TIME})?|${DURATION_TIME}|\d+W)`;
const EMAIL_ATOM = "[a-zA-Z0-9!#$%&'*+/=?^_`{|}~-]+";
const LABEL = `[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?`;
const EMAIL = String.raw`${EMAIL_ATOM}(?:\.${EMAIL_ATOM})*@(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?\.)+[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?`;
const OCTET = String.raw`(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)`;
const IPV4 = String.raw`(?:${OCTET}\.){3}${OCTET}`;
const H16 = '[0-9a-fA-F]{1,4}';
const LS32 = `(?:${H16}:${H16}|${IPV4})`;
// RFC 3986's IPv6address, one alternative per place of the "::".
const IPV6 = [
  `(?:${H16}:){6}${LS32}`,
  `::(?:${H16}:){5}${LS32}`,
  `(?:${H16})?::(?:${H16}:){4}${LS32}`,
  `(?:(?:${H16}:){0,1}${H16})?::(?:${H16}:){3}${LS32}`,
  `(?:(?:${H16}:){0,2}${H16})?::(?:${H16}:){2}${LS32}`,
  `(?:(?:${H16}:){0,3}${H16})?::${H16}:${LS32}`,
  `(?:(?:${H16}:){0,4}${H16})?::${LS32}`,
  `(?:(?:${H16}:){0,5}${H16})?::${H16}`,
  `(?:(?:${H16}:){0,6}${H16})?::`,
].join('|');
// RFC 3986, appendix A. Letters in either case (ABNF strings and ajv's /i flag are both
// case-insensitive). A host is an IP-literal or a reg-name: a reg-name's characters already
// spell every IPv4address, so the dotted-quad alternative adds nothing.
const PCT_ENCODED = '%[0-9A-Fa-f]{2}';
const UNRESERVED_SUB_DELIMS = "A-Za-z0-9\\-._~!$&'()*+,;=";
const PCHAR = `(?:[${UNRESERVED_SUB_DELIMS}:@]|${PCT_ENCODED})`;
const SEGMENT = `${PCHAR}*`;
const SEGMENT_NZ = `${PCHAR}+`;
/** A first segment without ":" (a relative reference's first segment would otherwise read as a scheme). */
const SEGMENT_NZ_NC = `(?:[${UNRESERVED_SUB_DELIMS}@]|${PCT_ENCODED})+`;
const SCHEME = '[A-Za-z][A-Za-z0-9+\\-.]*';
const USERINFO = `(?:[${UNRESERVED_SUB_DELIMS}:]|${PCT_ENCODED})*`;
const IP_FUTURE = `[Vv][0-9A-Fa-f]+\\.[${UNRESERVED_SUB_DELIMS}:]+`;
const REG_NAME = `(?:[${UNRESERVED_SUB_DELIMS}]|${PCT_ENCODED})*`;
const HOST = `(?:\\[(?:${IPV6}|${IP_FUTURE})\\]|${REG_NAME})`;
const AUTHORITY = `(?:${USERINFO}@)?${HOST}(?::\\d*)?`;
const PATH_ABEMPTY = `(?:/${SEGMENT})*`;
const PATH_ABSOLUTE = `/(?:${SEGMENT_NZ}(?:/${SEGMENT})*)?`;
const PATH_ROOTLESS = `${SEGMENT_NZ}(?:/${SEGMENT})*`;
const PATH_NOSCHEME = `${SEGMENT_NZ_NC}(?:/${SEGMENT})*`;
const QUERY_OR_FRAGMENT = `(?:[${UNRESERVED_SUB_DELIMS}:@/?]|${PCT_ENCODED})*`;
const QUERY_FRAGMENT = `(?:\\?${QUERY_OR_FRAGMENT})?(?:#${QUERY_OR_FRAGMENT})?`;
// hier-part without its path-empty alternative: ajv-formats' full "uri" refuses "scheme:" with
// nothing after the colon but a query or fragment, so the grammar does not write it.
const URI = `${SCHEME}:(?://${AUTHORITY}${PATH_ABEMPTY}|${PATH_ABSOLUTE}|${PATH_ROOTLESS})${QUERY_FRAGMENT}`;
const RELATIVE_REF = `(?://${AUTHORITY}${PATH_ABEMPTY}|${PATH_ABSOLUTE}|${PATH_NOSCHEME}|)${QUERY_FRAGMENT}`;
const URI_REFERENCE = `(?:${SCHEME}:(?://${AUTHORITY}${PATH_ABEMPTY}|${PATH_ABSOLUTE}|${PATH_ROOTLESS}|)${QUERY_FRAGMENT}|${RELATIVE_REF})`;
// ajv-formats' "byte" (base64, RFC 4648 with padding): groups of four, the last one padded. ajv
// tests it in multiline mode (its ^ and $ also match at line breaks), so a string passes when any
// one of its lines is base64 or empty: a PEM certificate ("-----BEGIN ...\n<base64>\n...") does,
// as Kubernetes' caBundle values are. Written the same way: any lines, one base64 line, any lines.
const BASE64_CHAR = '[A-Za-z0-9+/]';
const BASE64_LINE = `(?:${BASE64_CHAR}{4})*(?:${BASE64_CHAR}{2}==|${BASE64_CHAR}{3}=)?`;
const LINE_BREAK = String.raw`[\n\r\u2028\u2029]`;
const IN_LINE = String.raw`[^\n\r\u2028\u2029]`;
const BYTE = `(?:${IN_LINE}*${LINE_BREAK})*${BASE64_LINE}(?:${LINE_BREAK}${IN_LINE}*)*`;
// ajv-formats' "url" (a web URL: http, https or ftp, then a public host), written narrower than ajv
// checks it and never wider: a host name with a letters-only top-level label (ajv's IP-address
// alternative, with its lookaheads for private ranges, and non-ASCII names are not written), no
// user info, a port of 2 to 5 digits, and a path of printable ASCII (ajv takes any non-space).
const URL_LABEL = '(?:[a-zA-Z0-9]+-)*[a-zA-Z0-9]+';
const URL = `(?:[hH][tT][tT][pP][sS]?|[fF][tT][pP])://${URL_LABEL}(?:\\.${URL_LABEL})*\\.[a-zA-Z]{2,}(?::\\d{2,5})?(?:/[!-~]*)?`;
// RFC 4122's string form only: a `urn:uuid:` URN is a URI, not a uuid (the JSON Schema Test Suite holds it invalid).
const UUID = '[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}';

/** Format name → the anchored pattern of the strings enforced for it. */
export const STRING_FORMATS: Readonly<Record<string, string>> = {
  'date-time': `^${DATE}[Tt]${TIME}$`,
  date: `^${DATE}$`,
  time: `^${TIME}$`,
  duration: `^${DURATION}$`,
  email: `^${EMAIL}$`,
  hostname: `^${LABEL}(?:\\.${LABEL}){0,2}$`,
  ipv4: `^${IPV4}$`,
  ipv6: `^(?:${IPV6})$`,
  uuid: `^${UUID}$`,
  uri: `^${URI}$`,
  'uri-reference': `^${URI_REFERENCE}$`,
  byte: `^${BYTE}$`,
  url: `^${URL}$`,
};

/**
 * Formats a validator defines but the grammar does not enforce (format name → who defines it),
 * refused by name: a string of that format is checked by ajv-formats, Python jsonschema's format
 * checker or the drafts themselves, so "any string" would be served loosely.
 */
export const UNENFORCED_FORMATS: Readonly<Record<string, string>> = {
  regex: 'JSON Schema (an ECMA-262 regular expression)',
  iri: 'JSON Schema (RFC 3987)',
  'iri-reference': 'JSON Schema (RFC 3987)',
  'idn-email': 'JSON Schema (RFC 6531)',
  'idn-hostname': 'JSON Schema (RFC 5890)',
  'uri-template': 'JSON Schema (RFC 6570)',
  'json-pointer': 'JSON Schema (RFC 6901)',
  'relative-json-pointer': 'JSON Schema',
  'json-pointer-uri-fragment': 'ajv-formats',
  'iso-time': 'ajv-formats',
  'iso-date-time': 'ajv-formats',
  'host-name': 'JSON Schema draft 3',
  'ip-address': 'JSON Schema draft 3',
  color: 'JSON Schema draft 3 (CSS 2.1 colors)',
  'utc-millisec': 'JSON Schema draft 3',
  style: 'JSON Schema draft 3',
  phone: 'JSON Schema draft 3',
};

/**
 * ajv-formats' number formats (ajv applies them to numbers only; on other values they say
 * nothing): int32 is a whole number in the signed 32-bit range, int64 any whole number (every
 * number ajv reads whole passes), float and double any number. Python jsonschema knows none of
 * them, so each reads no looser than ajv. number-schema.ts enforces them.
 */
export const NUMBER_FORMATS: Readonly<Record<string, { readonly integer: boolean; readonly range?: readonly [number, number] }>> = {
  int32: { integer: true, range: [-(2 ** 31), 2 ** 31 - 1] },
  int64: { integer: true },
  float: { integer: false },
  double: { integer: false },
};

/**
 * Whether a format says nothing of any value: no validator here knows it (or, as ajv-formats'
 * password and binary, it passes every string), so a schema of it and annotations is any value.
 */
export function formatIsAnnotation(name: string): boolean {
  return !Object.hasOwn(STRING_FORMATS, name) && !Object.hasOwn(UNENFORCED_FORMATS, name) && !Object.hasOwn(NUMBER_FORMATS, name);
}

/** How the grammar reads a string's format: the anchored pattern it enforces, any string, or a refusal naming who defines it. */
export function stringFormat(name: string): { readonly pattern: string } | { readonly anyString: true } | { readonly refusedBy: string } {
  if (Object.hasOwn(STRING_FORMATS, name)) return { pattern: STRING_FORMATS[name]! };
  if (Object.hasOwn(UNENFORCED_FORMATS, name)) return { refusedBy: UNENFORCED_FORMATS[name]! };
  // Formats no validator knows, and those that allow every string (ajv-formats' password and
  // binary; its int32 / int64 / float / double, which ajv applies to numbers only): annotations.
  return { anyString: true };
}
