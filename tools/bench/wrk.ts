// The API benchmark's throughput and service-time rounds run Debian's `wrk`: a C load generator on
// one thread, so it takes far less of a 2-core machine than a Node generator does, and what is left
// goes to the server being measured. When wrk is missing the bench installs it the way CI installs
// chromium (apt-get as root or via sudo -n, bounded in time); when that fails the bench says so and
// stops instead of silently measuring with something else.

import { execFileSync, spawn } from 'node:child_process';
import { hasCommand, onCpus } from './pin.js';

export interface WrkResult {
  readonly rps: number;
  readonly p50_ms: number;
  readonly p90_ms: number;
  readonly p99_ms: number;
  /** Socket errors plus non-2xx/3xx answers: any is a failed run. */
  readonly errors: number;
  readonly requests: number;
}

const has = hasCommand;

/** The path of wrk, installing Debian's package when it is missing; throws when it cannot be had. */
export function ensureWrk(log: (s: string) => void): string {
  if (has('wrk')) return 'wrk';
  log("wrk is missing: installing Debian's package (apt-get, up to 10 minutes)");
  const root = process.getuid?.() === 0;
  const sudo = root ? [] : ['sudo', '-n'];
  if (!root && !has('sudo')) throw new Error('wrk is not installed and there is no root or sudo to install it: apt-get install wrk');
  const run = (args: string[]): void => void execFileSync('timeout', ['600', ...sudo, ...args], { stdio: 'ignore' });
  try {
    run(['apt-get', 'update']);
    run(['apt-get', 'install', '-y', 'wrk']);
  } catch (err) {
    throw new Error(`wrk is not installed and apt-get could not install it (${(err as Error).message}): apt-get install wrk`);
  }
  if (!has('wrk')) throw new Error('apt-get ran but wrk is still not on PATH');
  return 'wrk';
}

/** wrk prints durations as 812.00us, 1.20ms or 1.03s. */
function ms(text: string): number {
  const m = /^([\d.]+)(us|ms|s|m)$/.exec(text);
  if (!m) throw new Error(`wrk: unreadable duration '${text}'`);
  const scale = { us: 0.001, ms: 1, s: 1000, m: 60_000 }[m[2] as 'us' | 'ms' | 's' | 'm'];
  return Math.round(Number(m[1]) * scale * 1000) / 1000;
}

/** Parses wrk's `--latency` report (the format of wrk 4.x). Exported for the bench's own check. */
export function parseWrk(out: string): WrkResult {
  const num = (re: RegExp): number => {
    const m = re.exec(out);
    if (!m) throw new Error(`wrk: no ${re.source} in its report:\n${out}`);
    return Number(m[1]);
  };
  const pct = (p: number): number => {
    const m = new RegExp(`^\\s+${p}%\\s+(\\S+)`, 'm').exec(out);
    if (!m) throw new Error(`wrk: no ${p}% latency in its report:\n${out}`);
    return ms(m[1]);
  };
  const sock = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(out);
  const errors = (sock ? sock.slice(1).reduce((a, x) => a + Number(x), 0) : 0) + (non2xx ? Number(non2xx[1]) : 0);
  return {
    rps: Math.round(num(/Requests\/sec:\s+([\d.]+)/)),
    p50_ms: pct(50),
    p90_ms: pct(90),
    p99_ms: pct(99),
    errors,
    requests: num(/(\d+) requests in/),
  };
}

/** One wrk run (one thread, `connections` connections, `seconds` long) against `url`, on `cpus` when given. */
export function wrk(
  bin: string,
  url: string,
  headers: Record<string, string>,
  connections: number,
  seconds: number,
  cpus: string | null = null,
): Promise<WrkResult> {
  const args = ['-t1', `-c${connections}`, `-d${seconds}s`, '--latency', '--timeout', '10s'];
  for (const [k, v] of Object.entries(headers)) args.push('-H', `${k}: ${v}`);
  args.push(url);
  return new Promise((resolve, reject) => {
    const [cmd, argv] = onCpus(cpus, bin, args);
    const p = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (b: Buffer) => (out += b.toString()));
    p.stderr.on('data', (b: Buffer) => (out += b.toString()));
    p.once('error', reject);
    p.once('exit', (code) => {
      if (code !== 0) return reject(new Error(`wrk exited with ${code}:\n${out}`));
      try {
        resolve(parseWrk(out));
      } catch (err) {
        reject(err instanceof Error ? err : new Error(String(err)));
      }
    });
  });
}
