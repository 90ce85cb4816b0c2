// Tests read JSON bodies loosely and assert on them field by field; this overload lets
// `response.json()` be used without a cast at every call (test code only).
export {};
declare global {
  interface Response {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    json(): Promise<any>;
  }
}
