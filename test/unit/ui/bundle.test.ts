// The committed bundle is what its sources build to: a change under ui/src without
// `npm run ui:build` fails here, so the server never serves a stale UI.
import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { BUNDLE, bundleText } from '../../../ui/build.js';

it('ui/public/app.js is up to date with ui/src (npm run ui:build)', async () => {
  expect(readFileSync(BUNDLE, 'utf8') === (await bundleText())).toBe(true);
});
