// Headless Chromium for the web UI's tests: Debian's chromium driven by playwright-core (no
// browser download). CONVEYOR_CHROMIUM names another binary; without one the tests skip and say why.

import { existsSync } from 'node:fs';

const CANDIDATES = ['/usr/lib/chromium/chromium', '/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'];

/** The Chromium binary to drive, or undefined when none is installed. */
export function chromiumExecutable(): string | undefined {
  const override = process.env['CONVEYOR_CHROMIUM'];
  if (override) return existsSync(override) ? override : undefined;
  return CANDIDATES.find((path) => existsSync(path));
}

export const NO_CHROMIUM_REASON = `no Chromium found (looked for $CONVEYOR_CHROMIUM, ${CANDIDATES.join(', ')}): install Debian's chromium package (.ci/run does) to run the web UI's browser tests`;
