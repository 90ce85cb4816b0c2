import { describe, expect, it } from 'vitest';
import { ConveyorError } from '../../../src/errors.js';
import { AccessPolicy, httpCredential, type AccessClass, type AccessOptions } from '../../../src/security/access-policy.js';

const API = 'sk-api';
const ADMIN = 'sk-admin';
const options = (o: Partial<AccessOptions>): AccessOptions => ({ apiKeys: [], adminKeys: [], authHealth: false, authMetrics: false, ...o });

/** The outcome of `check` as a short word: ok, 401 or 403. */
function outcome(policy: AccessPolicy, access: AccessClass, authorization: string | undefined): string {
  try {
    policy.check(access, authorization);
    return 'ok';
  } catch (error) {
    expect(error).toBeInstanceOf(ConveyorError);
    return String((error as ConveyorError).httpStatus);
  }
}

const bearer = (key: string) => `Bearer ${key}`;
const CREDENTIALS = { none: undefined, wrong: bearer('sk-nope'), api: bearer(API), admin: bearer(ADMIN) } as const;

describe('AccessPolicy', () => {
  // [configuration, class, outcome for none / wrong / api / admin]
  it.each([
    ['no keys', options({}), 'api', ['ok', 'ok', 'ok', 'ok']],
    ['no keys', options({}), 'control', ['ok', 'ok', 'ok', 'ok']],
    ['no keys', options({}), 'health', ['ok', 'ok', 'ok', 'ok']],
    ['API and admin keys', options({ apiKeys: [API], adminKeys: [ADMIN] }), 'api', ['401', '401', 'ok', 'ok']],
    ['API and admin keys', options({ apiKeys: [API], adminKeys: [ADMIN] }), 'control', ['401', '401', '403', 'ok']],
    ['API and admin keys', options({ apiKeys: [API], adminKeys: [ADMIN] }), 'health', ['ok', 'ok', 'ok', 'ok']],
    ['API and admin keys', options({ apiKeys: [API], adminKeys: [ADMIN] }), 'metrics', ['ok', 'ok', 'ok', 'ok']],
    ['API keys only', options({ apiKeys: [API] }), 'api', ['401', '401', 'ok', '401']],
    ['API keys only', options({ apiKeys: [API] }), 'control', ['401', '401', '403', '401']],
    ['admin keys only', options({ adminKeys: [ADMIN] }), 'api', ['ok', 'ok', 'ok', 'ok']],
    ['admin keys only', options({ adminKeys: [ADMIN] }), 'control', ['401', '401', '401', 'ok']],
    ['--auth-health', options({ apiKeys: [API], adminKeys: [ADMIN], authHealth: true }), 'health', ['401', '401', 'ok', 'ok']],
    ['--auth-health', options({ apiKeys: [API], adminKeys: [ADMIN], authHealth: true }), 'metrics', ['ok', 'ok', 'ok', 'ok']],
    ['--auth-metrics', options({ apiKeys: [API], adminKeys: [ADMIN], authMetrics: true }), 'metrics', ['401', '401', 'ok', 'ok']],
    ['--auth-metrics', options({ apiKeys: [API], adminKeys: [ADMIN], authMetrics: true }), 'health', ['ok', 'ok', 'ok', 'ok']],
    ['every key and flag', options({ apiKeys: [API], adminKeys: [ADMIN], authHealth: true, authMetrics: true }), 'ui', ['ok', 'ok', 'ok', 'ok']],
  ] as const)('%s, %s: none/wrong/api/admin → %j', (_name, config, access, expected) => {
    const policy = new AccessPolicy(config);
    expect(Object.values(CREDENTIALS).map((c) => outcome(policy, access, c))).toEqual(expected);
  });

  it('says why: a missing key, a wrong one, and an API key on a control route', () => {
    const policy = new AccessPolicy(options({ apiKeys: [API], adminKeys: [ADMIN] }));
    expect(() => policy.check('api', undefined)).toThrow("You didn't provide an API key");
    expect(() => policy.check('api', bearer('sk-nope'))).toThrow('Incorrect API key provided.');
    expect(() => policy.check('control', bearer(API))).toThrow('this route needs an admin key');
    const apiOnly = new AccessPolicy(options({ apiKeys: [API] }));
    expect(() => apiOnly.check('control', bearer(API))).toThrow('control routes are disabled: this server has API keys but no admin key');
  });

  it('reads only the Bearer scheme, case-insensitively, one token', () => {
    const policy = new AccessPolicy(options({ apiKeys: [API] }));
    expect(outcome(policy, 'api', `bearer ${API}`)).toBe('ok');
    expect(outcome(policy, 'api', `Bearer   ${API}  `)).toBe('ok');
    expect(outcome(policy, 'api', API)).toBe('401');
    expect(outcome(policy, 'api', `Basic ${API}`)).toBe('401');
    expect(outcome(policy, 'api', `Bearer ${API} extra`)).toBe('401');
    expect(outcome(policy, 'api', '')).toBe('401');
  });

  it('compares keys of any length (digests), never matching a prefix or an extension', () => {
    const policy = new AccessPolicy(options({ apiKeys: [API, 'k'] }));
    for (const key of ['sk-ap', 'sk-apii', 'x'.repeat(10_000), 'K']) expect(outcome(policy, 'api', bearer(key))).toBe('401');
    expect(outcome(policy, 'api', bearer('k'))).toBe('ok');
  });

  it('guards anything once any key is configured', () => {
    expect(AccessPolicy.open().guardsAnything()).toBe(false);
    expect(new AccessPolicy(options({ adminKeys: [ADMIN] })).guardsAnything()).toBe(true);
    expect(new AccessPolicy(options({ apiKeys: [API] })).guardsAnything()).toBe(true);
  });

  it('describes what each class needs for the startup log', () => {
    expect(new AccessPolicy(options({ apiKeys: [API] })).describe()).toBe('access: 1 API key(s), 0 admin key(s); api key, control refused, health none, metrics none, ui none');
    expect(AccessPolicy.open().describe()).toBe('access: 0 API key(s), 0 admin key(s); api none, control none, health none, metrics none, ui none');
  });
});

describe('httpCredential', () => {
  it("takes Anthropic's x-api-key as a Bearer key; Authorization wins when both are sent", () => {
    expect(httpCredential({ 'x-api-key': API })).toBe(bearer(API));
    expect(httpCredential({ authorization: bearer(ADMIN), 'x-api-key': API })).toBe(bearer(ADMIN));
    expect(httpCredential({})).toBeUndefined();
    // A repeated header is no one key.
    expect(httpCredential({ 'x-api-key': [API, API] })).toBeUndefined();
    const policy = new AccessPolicy(options({ apiKeys: [API] }));
    expect(outcome(policy, 'api', httpCredential({ 'x-api-key': API }))).toBe('ok');
    expect(outcome(policy, 'api', httpCredential({ 'x-api-key': 'nope' }))).toBe('401');
  });
});
