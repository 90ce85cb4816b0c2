// Where a result came from. Numbers from different machines or commits are not comparable, so
// every results.json records both.

import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { availableParallelism, cpus, platform, arch, totalmem } from 'node:os';
import type { MachineInfo } from './types.js';

export function machineInfo(): MachineInfo {
  return {
    cpuModel: cpus()[0]?.model.trim() ?? 'unknown',
    cores: availableParallelism(),
    memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    platform: platform(),
    arch: arch(),
    node: process.version,
    onnxruntime: onnxruntimeVersion(),
    gitCommit: git(['rev-parse', 'HEAD']) ?? 'unknown',
    gitDirty: gitDirty(),
  };
}

function onnxruntimeVersion(): string {
  try {
    // The version of the binding actually installed, without loading the native module.
    const require = createRequire(import.meta.url);
    const manifest = require('onnxruntime-node/package.json') as { version?: string };
    return manifest.version ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

function git(args: readonly string[]): string | undefined {
  try {
    return execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 10_000 }).trim();
  } catch {
    return undefined;
  }
}

function gitDirty(): boolean | null {
  // Untracked files are ignored: generated models and other people's new files are not part of
  // the code being measured.
  const status = git(['status', '--porcelain', '--untracked-files=no']);
  return status === undefined ? null : status.length > 0;
}
