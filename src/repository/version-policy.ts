// Triton's version_policy: which of the version directories present are served.

import type { VersionPolicy } from '../contracts/model-config.js';

export function selectVersions(policy: VersionPolicy, available: readonly number[]): number[] {
  const sorted = [...available].sort((a, b) => a - b);
  if ('all' in policy) return sorted;
  if ('specific' in policy) return sorted.filter((v) => policy.specific.versions.includes(v));
  return sorted.slice(Math.max(0, sorted.length - policy.latest.num_versions));
}
