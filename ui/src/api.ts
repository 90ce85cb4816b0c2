// Calls to the server from the page. The key is asked for once and kept in the tab's
// sessionStorage (gone when the tab closes); every call sends it as a Bearer token.

const KEY_STORAGE = 'conveyor.apiKey';

export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export const storedKey = (): string | null => sessionStorage.getItem(KEY_STORAGE);
export const storeKey = (key: string): void => sessionStorage.setItem(KEY_STORAGE, key);
export const forgetKey = (): void => sessionStorage.removeItem(KEY_STORAGE);

let onUnauthorized: () => void = () => {};
/** What to do when the server refuses the key (or its absence): ask for one. */
export const whenUnauthorized = (handler: () => void): void => {
  onUnauthorized = handler;
};

function headers(init: RequestInit | undefined): Headers {
  const out = new Headers(init?.headers);
  const key = storedKey();
  if (key) out.set('authorization', `Bearer ${key}`);
  if (init?.body !== undefined && !out.has('content-type')) out.set('content-type', 'application/json');
  return out;
}

/** The message of an error body in any front end's shape. */
async function errorText(response: Response): Promise<string> {
  const text = await response.text();
  try {
    const body = JSON.parse(text) as { error?: string | { message?: string } };
    if (typeof body.error === 'string') return body.error;
    if (body.error?.message) return body.error.message;
  } catch {
    // not JSON
  }
  return text || response.statusText;
}

/** fetch with the key; a non-2xx answer throws HttpError with the server's message. */
export async function call(path: string, init?: RequestInit): Promise<Response> {
  const response = await fetch(path, { ...init, headers: headers(init) });
  if (response.ok) return response;
  if (response.status === 401) onUnauthorized();
  throw new HttpError(response.status, `${response.status}: ${await errorText(response)}`);
}

/** The answer's JSON; an empty body (repository load and unload answer with none) is null. */
export async function callJson<T>(path: string, init?: RequestInit): Promise<T> {
  const text = await (await call(path, init)).text();
  return (text === '' ? null : JSON.parse(text)) as T;
}

export const postJson = <T>(path: string, body: unknown, init?: RequestInit): Promise<T> => callJson<T>(path, { ...init, method: 'POST', body: JSON.stringify(body) });
