// Declarations of build.mjs (plain JavaScript so that the install step needs nothing from node_modules).
/** Where the kernel for this source, these flags and this Node ABI lives. */
export function kernelPath(): string;
/** Builds the kernel unless it is there; returns its path, or throws saying why it cannot be built. */
export function buildKernel(): string;
