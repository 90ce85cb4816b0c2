import { describe, expect, it } from 'vitest';
import { parseModelConfig } from '../../../src/repository/config/index.js';
import { selectVersions } from '../../../src/repository/version-policy.js';

const policyOf = (text: string) => parseModelConfig(`backend: "onnxruntime"\n${text}`, 'config.pbtxt', 'm').version_policy;
const PRESENT = [3, 1, 10, 2];

describe('selectVersions', () => {
  it('serves the newest version by default, and the newest N under latest', () => {
    expect(selectVersions(policyOf(''), PRESENT)).toEqual([10]);
    expect(selectVersions(policyOf('version_policy { latest { num_versions: 2 } }'), PRESENT)).toEqual([3, 10]);
    expect(selectVersions(policyOf('version_policy { latest { num_versions: 9 } }'), PRESENT)).toEqual([1, 2, 3, 10]);
  });

  it('serves every version under all, and the listed ones present under specific', () => {
    expect(selectVersions(policyOf('version_policy { all {} }'), PRESENT)).toEqual([1, 2, 3, 10]);
    expect(selectVersions(policyOf('version_policy { specific { versions: [ 10, 2, 7 ] } }'), PRESENT)).toEqual([2, 10]);
  });

  it('serves every version when the policy sets none of the three, as Triton does (was a TypeError)', () => {
    expect(policyOf('version_policy {}')).toEqual({});
    expect(selectVersions(policyOf('version_policy {}'), PRESENT)).toEqual([1, 2, 3, 10]);
  });
});
