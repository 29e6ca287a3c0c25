// CPU pinning for the API benchmark. On a small machine the load generator and the server share the
// cores with each other and with the server's own helper threads (GC, libuv), so a server that
// needs more CPU per request also loses more of it to the generator, and the ratio against the
// bare route measures the scheduler as much as the route. Pinned (the default when there are at
// least two CPUs and `taskset` exists): generators (wrk, the open-loop generator) run on CPU 0,
// every measured server on the other CPUs, the same for the bare route and for serve.
// PMTAPE_BENCH_API_PIN=off runs everything unpinned.

import { execFileSync } from 'node:child_process';
import { availableParallelism } from 'node:os';

export interface Pinning {
  /** taskset CPU lists, or null when unpinned. */
  readonly generator: string | null;
  readonly servers: string | null;
}

/** True when `cmd` is on PATH (also used by wrk.ts). */
export function hasCommand(cmd: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

export function pinning(env: NodeJS.ProcessEnv = process.env): Pinning {
  const n = availableParallelism();
  if (env.PMTAPE_BENCH_API_PIN === 'off' || n < 2 || !hasCommand('taskset')) return { generator: null, servers: null };
  return { generator: '0', servers: n === 2 ? '1' : `1-${n - 1}` };
}

/** The command and arguments that run `cmd args` on `cpus` (unchanged when null). */
export function onCpus(cpus: string | null, cmd: string, args: readonly string[]): [string, string[]] {
  return cpus === null ? [cmd, [...args]] : ['taskset', ['-c', cpus, cmd, ...args]];
}
