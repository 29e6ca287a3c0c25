// Shared helpers of the self-hosting tests: run the real CLI as a child process, wait for its
// `ready <url>` line, collect its output, and always kill it afterwards. Also a tiny HTTP client.

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** dist/cli.js, resolved from this compiled file (dist/test/selfhost/helpers.js). */
export const CLI = resolve(dirname(fileURLToPath(import.meta.url)), '../../cli.js');
/** The repository root (where package.json and public/ live). */
export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

export interface Child {
  readonly proc: ChildProcess;
  stdout: string;
  stderr: string;
  /** Resolves with the URL of the first `ready <url>` line. */
  readonly ready: Promise<string>;
  /** Resolves with the exit code (or the signal name) once the process ended. */
  readonly exited: Promise<number | string>;
  /** `signal` (SIGTERM by default), then SIGKILL after `graceMs`; resolves with the exit code. */
  stop(graceMs?: number, signal?: NodeJS.Signals): Promise<number | string>;
}

interface TapLike {
  teardown(fn: () => unknown): void;
}

/**
 * Starts `node dist/cli.js ...args` (`cli` instead when given); the child is killed at teardown whatever
 * happens. `noLoader` runs it without tap's loader: tap wraps child_process and puts the loader back in
 * every child's NODE_OPTIONS, so `env -u` takes it out after that (env execs node: same pid).
 */
export function runCli(
  t: TapLike,
  args: string[],
  opts: {
    env?: NodeJS.ProcessEnv;
    cwd?: string;
    readyTimeoutMs?: number;
    uid?: number;
    gid?: number;
    cli?: string;
    noLoader?: boolean;
  } = {},
): Child {
  const argv = [opts.cli ?? CLI, ...args];
  const proc = spawn(opts.noLoader ? 'env' : process.execPath, opts.noLoader ? ['-u', 'NODE_OPTIONS', process.execPath, ...argv] : argv, {
    cwd: opts.cwd ?? REPO,
    uid: opts.uid,
    gid: opts.gid,
    env: { ...process.env, PMTAPE_LOG_LEVEL: 'warn', ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const child = { proc, stdout: '', stderr: '' } as Child & { stdout: string; stderr: string };
  const exited = new Promise<number | string>((res) => proc.on('exit', (code, sig) => res(code ?? sig ?? -1)));
  const ready = new Promise<string>((res, rej) => {
    const timer = setTimeout(
      () =>
        rej(
          new Error(
            `no ready line from ${args.join(' ')} within ${opts.readyTimeoutMs ?? 30000} ms\nstdout:\n${child.stdout.slice(-2000)}\nstderr:\n${child.stderr.slice(-2000)}`,
          ),
        ),
      opts.readyTimeoutMs ?? 30000,
    );
    proc.stdout.on('data', (d: Buffer) => {
      child.stdout += d.toString();
      const m = /^ready (\S+)$/m.exec(child.stdout);
      if (m) {
        clearTimeout(timer);
        res(m[1]);
      }
    });
    proc.stderr.on('data', (d: Buffer) => (child.stderr += d.toString()));
    void exited.then((code) => {
      clearTimeout(timer);
      rej(
        new Error(
          `${args.join(' ')} exited (${code}) before ready\nstdout:\n${child.stdout.slice(-2000)}\nstderr:\n${child.stderr.slice(-2000)}`,
        ),
      );
    });
  });
  ready.catch(() => undefined);
  Object.assign(child, {
    ready,
    exited,
    stop: async (graceMs = 10_000, signal: NodeJS.Signals = 'SIGTERM') => {
      if (proc.exitCode !== null || proc.signalCode !== null) return exited;
      proc.kill(signal);
      const timer = setTimeout(() => proc.kill('SIGKILL'), graceMs);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  });
  t.teardown(() => child.stop(3000));
  return child;
}

/** Runs a short CLI command to completion. */
export function runCliOnce(
  args: string[],
  opts: { env?: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number } = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((res, rej) => {
    const proc = spawn(process.execPath, [CLI, ...args], {
      cwd: opts.cwd ?? REPO,
      env: { ...process.env, PMTAPE_LOG_LEVEL: 'warn', ...opts.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      rej(new Error(`${args.join(' ')} did not finish within ${opts.timeoutMs ?? 60000} ms\n${stderr}`));
    }, opts.timeoutMs ?? 60000);
    proc.on('exit', (code) => {
      clearTimeout(timer);
      res({ code, stdout, stderr });
    });
  });
}

/** A fresh temp dir removed at teardown. */
export function tempDir(t: TapLike, prefix = 'pmtape-selfhost-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export async function getJson(url: string, key?: string): Promise<{ status: number; body: any }> {
  const res = await fetch(url, { headers: key ? { Authorization: `Bearer ${key}` } : {} });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: keep the text for the assertion message
  }
  return { status: res.status, body };
}

export { waitFor } from '../../tools/fixtures/wait.js';

/** The key printed on a `key <key>` line, or null. */
export function keyFrom(stdout: string): string | null {
  return /^key (pmt_\S+)$/m.exec(stdout)?.[1] ?? null;
}
