// Tests read JSON bodies loosely and assert on them field by field; this overload lets
// `response.json()` be used without a cast at every call (test code only).
export {};
declare global {
  interface Response {
    // biome-ignore lint/suspicious/noExplicitAny: the loose read this file exists for (test code only)
    json(): Promise<any>;
  }
}
