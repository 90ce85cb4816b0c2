// Builds the native paged-attention kernel (paged-attention.c) into build/ with the system's C
// compiler and Node's own headers: run at install (package.json "postinstall") and, where that
// was skipped, on first use (src/native/paged-attention-kernel.ts). The file name carries a hash
// of the source and flags, so an edited kernel is rebuilt rather than a stale one loaded. Plain
// JavaScript so the install step needs nothing from node_modules. Never fails the install: where
// no compiler or headers exist the server runs the paged graph's ONNX attention instead.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const SOURCE = join(here, 'paged-attention.c');
// Included by SOURCE (its AVX-512 path, the kept threads, the decoder layer ops and their bindings): part of what the build's hash covers.
const INCLUDED = ['paged-attention-avx512.h', 'work-pool.h', 'decoder-ops.h', 'decoder-ops-napi.h'].map((file) => join(here, file));
// -march=native: built where it runs. -ffast-math lets the compiler reassociate (vectorized dot
// products and sums) and call glibc's vector expf for the softmax (scalar expf cost a third of a
// decode layer); the kernel never produces infinities or NaN from finite inputs. Compiled and
// linked in two steps: GCC links crtfastmath.o into anything linked with -ffast-math, -shared
// included, and its constructor sets flush-to-zero in the loading thread's MXCSR, which would
// silently turn JavaScript's subnormal numbers into zeros in the engine worker.
const COMPILE_FLAGS = ['-O3', '-march=native', '-ffast-math', '-std=gnu11', '-fPIC'];
const LINK_FLAGS = ['-shared'];

function nodeHeaders() {
  const candidates = [join(dirname(dirname(process.execPath)), 'include', 'node'), '/usr/include/node', '/usr/local/include/node'];
  return candidates.find((dir) => existsSync(join(dir, 'node_api.h')));
}

/** Where the kernel for this source, these flags and this Node ABI lives. */
export function kernelPath() {
  const hash = createHash('sha256')
    .update(readFileSync(SOURCE))
    .update(Buffer.concat(INCLUDED.map((file) => readFileSync(file))))
    .update([...COMPILE_FLAGS, '|', ...LINK_FLAGS].join(' '))
    .update(process.versions.modules)
    .digest('hex')
    .slice(0, 12);
  return join(here, 'build', `paged_attention-${hash}.node`);
}

/** Builds the kernel unless it is there; returns its path, or throws saying why it cannot be built. */
export function buildKernel() {
  const target = kernelPath();
  if (existsSync(target)) return target;
  const headers = nodeHeaders();
  if (!headers) throw new Error("Node's C headers (node_api.h) were not found");
  const compiler = process.env.CC || 'cc';
  mkdirSync(dirname(target), { recursive: true });
  const partial = `${target}.${process.pid}.tmp`;
  const object = `${partial}.o`;
  try {
    execFileSync(compiler, [...COMPILE_FLAGS, `-I${headers}`, '-c', SOURCE, '-o', object], { stdio: ['ignore', 'ignore', 'pipe'] });
    execFileSync(compiler, [...LINK_FLAGS, object, '-o', partial, '-lpthread', '-lm'], { stdio: ['ignore', 'ignore', 'pipe'] });
    renameSync(partial, target); // atomic: a concurrent builder's file is complete or absent
  } catch (error) {
    rmSync(partial, { force: true });
    const detail = error && typeof error === 'object' && 'stderr' in error && error.stderr ? String(error.stderr).trim().split('\n').slice(0, 3).join(' | ') : String(error?.message ?? error);
    throw new Error(`${compiler} could not build ${SOURCE}: ${detail}`);
  } finally {
    rmSync(object, { force: true });
  }
  return target;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  try {
    console.log(`conveyor: native paged attention built: ${buildKernel()}`);
  } catch (error) {
    console.warn(`conveyor: native paged attention not built (the ONNX attention will be used): ${error.message}`);
  }
}
