// Triton's version_policy: which of the version directories present are served.

import type { VersionPolicy } from '../contracts/model-config.js';

/** As Triton's VersionsToLoad: specific, else latest, else every version (`all`, or a policy that sets none). */
export function selectVersions(policy: VersionPolicy, available: readonly number[]): number[] {
  const sorted = [...available].sort((a, b) => a - b);
  const { specific, latest } = policy;
  if (specific) return sorted.filter((v) => specific.versions.includes(v));
  if (latest) return sorted.slice(Math.max(0, sorted.length - latest.num_versions));
  return sorted;
}
