export class ConvertError extends Error {}
