// The toolchain convention: every external tool the full suite needs (Python venvs, binaries built
// from source, Debian packages) is one module in tools/toolchains/ exporting a `Toolchain`. `npm test`
// runs setup.ts, which ensures each in turn into a git-ignored cache; tests find the tools through
// `locate()` (test/helpers/toolchains.ts), so no test depends on what happens to be on the machine.
// tools/ is not src/: the cache override is read here, not in src/config.ts.

import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface Toolchain {
  /** Short name, used by `requireTool(t, name)` and in messages. */
  readonly name: string;
  /** One line: what it is and why the suite needs it. */
  readonly describe: string;
  /** Installs or builds the tool into the cache if its stamp is missing or stale; idempotent. Prints one
   *  progress line per step to stderr through `log`; throws an error saying what is missing and how to fix it. */
  ensure(log: (line: string) => void): Promise<void>;
  /** The tool's path once ensured (a binary, or a folder the toolchain module documents), else null. */
  locate(): string | null;
}

/** The repository root: this file is tools/toolchains/toolchain.ts, compiled to dist/tools/toolchains/. */
function repoRoot(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  for (const up of ['../..', '../../..']) {
    const dir = resolve(here, up);
    if (existsSync(resolve(dir, 'package.json'))) return dir;
  }
  return resolve(here, '../../..');
}

/** The cache: `.toolchains/` at the repository root, or PMTAPE_TOOLCHAINS_DIR. */
export function toolchainsDir(): string {
  const override = process.env.PMTAPE_TOOLCHAINS_DIR;
  return override ? resolve(override) : resolve(repoRoot(), '.toolchains');
}

/** True under CI (env CI set and not "false" or "0"): a missing tool is then a failure, not a skip. */
export function underCi(): boolean {
  const ci = process.env.CI;
  return ci !== undefined && ci !== '' && ci !== 'false' && ci !== '0';
}

/** A short hash of what an install depends on (versions, requirement lists), written as its stamp. */
export function stampOf(...parts: string[]): string {
  return createHash('sha256').update(parts.join('\n')).digest('hex').slice(0, 16);
}

/** Whether `file` holds exactly `stamp`. */
export function stampMatches(file: string, stamp: string): boolean {
  try {
    return readFileSync(file, 'utf8').trim() === stamp;
  } catch {
    return false;
  }
}

export function writeStamp(file: string, stamp: string): void {
  writeFileSync(file, `${stamp}\n`);
}

/** Runs a command to completion; rejects with its last output lines when it fails or cannot start. */
export function run(cmd: string, args: string[], opts: { timeoutMs?: number; env?: NodeJS.ProcessEnv } = {}): Promise<string> {
  return new Promise((res, rej) => {
    const proc = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], env: opts.env ?? process.env });
    let out = '';
    proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
    proc.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const timer = opts.timeoutMs ? setTimeout(() => proc.kill('SIGKILL'), opts.timeoutMs) : undefined;
    proc.on('error', (err) => {
      clearTimeout(timer);
      rej(err);
    });
    proc.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) res(out);
      else rej(new Error(`${cmd} ${args.join(' ')} failed (${code ?? signal}):\n${out.split('\n').slice(-15).join('\n')}`));
    });
  });
}
