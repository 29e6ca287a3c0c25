// Child-process plumbing for storage tests: spawn a compiled helper, collect its stdout lines,
// wait for a line, kill it, and always reap it (a zombie would still count as a live lock holder).

import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const helperPath = (name: string): string => fileURLToPath(new URL(`./${name}`, import.meta.url));
export const cliPath = fileURLToPath(new URL('../../../cli.js', import.meta.url));

export interface Child {
  readonly proc: ChildProcess;
  readonly lines: string[];
  /** Resolves with the first line matching `re` (already seen or future). */
  waitFor(re: RegExp, timeoutMs?: number): Promise<string>;
  /** Resolves once the process exited (with its code or signal). */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr(): string;
}

export function startNode(script: string, args: string[]): Child {
  const proc = spawn(process.execPath, [script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  let partial = '';
  let err = '';
  const listeners = new Set<() => void>();
  proc.stdout.setEncoding('utf8');
  proc.stdout.on('data', (chunk: string) => {
    partial += chunk;
    const parts = partial.split('\n');
    partial = parts.pop()!;
    lines.push(...parts);
    for (const l of listeners) l();
  });
  proc.stderr.setEncoding('utf8');
  proc.stderr.on('data', (c: string) => (err += c));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    proc.on('exit', (code, signal) => {
      for (const l of listeners) l();
      // 'exit' can fire before the last stdout chunk; 'close' waits for the streams.
      proc.on('close', () => resolve({ code, signal }));
    });
  });
  return {
    proc,
    lines,
    exited,
    stderr: () => err,
    waitFor(re, timeoutMs = 20_000) {
      return new Promise((resolve, reject) => {
        const check = (): void => {
          const hit = lines.find((l) => re.test(l));
          if (hit !== undefined) {
            done();
            resolve(hit);
          } else if (proc.exitCode !== null || proc.signalCode !== null) {
            done();
            reject(new Error(`child exited before printing ${re}: ${err}`));
          }
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`timeout waiting for ${re}; stderr: ${err}`));
        }, timeoutMs);
        const done = (): void => {
          clearTimeout(timer);
          listeners.delete(check);
        };
        listeners.add(check);
        check();
      });
    },
  };
}

/** SIGKILLs the child (if still running) and waits until it is reaped. */
export async function kill9(c: Child): Promise<void> {
  if (c.proc.exitCode === null && c.proc.signalCode === null) c.proc.kill('SIGKILL');
  await c.exited;
}

/**
 * How many kill -9 rounds a crash test runs: `short` in `npm test`, PMTAPE_CRASH_ROUNDS (100 with
 * `npm run test:crash`) when set.
 */
export function crashRounds(short: number): number {
  const n = Number(process.env.PMTAPE_CRASH_ROUNDS);
  return Number.isInteger(n) && n > 0 ? n : short;
}
