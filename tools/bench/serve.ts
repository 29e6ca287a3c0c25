// A real `pmtape serve` for the benchmarks that measure the API end to end (replay, parquet): a
// child process on an ephemeral port with rate limits off, and an NDJSON body counted as it streams.

import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

/** Starts `serve` on `dataDir` (with `env` added) and resolves with its base URL once it says `ready`. */
export async function startServe(dataDir: string, env: NodeJS.ProcessEnv = {}): Promise<{ url: string; proc: ChildProcess }> {
  const proc = spawn(process.execPath, [join(here, '..', '..', 'cli.js'), 'serve', '--data-dir', dataDir, '--port', '0'], {
    env: { ...process.env, PMTAPE_LOG_LEVEL: 'warn', PMTAPE_RATE_LIMITS: 'off', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: proc.stdout }).on('line', (l) => {
      const m = /^ready (\S+)/.exec(l);
      if (m) resolve(m[1]);
    });
    proc.on('exit', (code) => reject(new Error(`serve exited ${code}`)));
  });
  return { url, proc };
}

/** Stops a `serve` started above and waits for it to exit. */
export async function stopServe(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null) return;
  proc.kill('SIGTERM');
  await new Promise((r) => proc.once('exit', r));
}

/** Lines of an NDJSON body, counted as they stream in (nothing kept). */
export async function countLines(res: Response): Promise<number> {
  if (!res.ok) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
  let n = 0;
  const reader = res.body!.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return n;
    for (let i = 0; i < value.length; i++) if (value[i] === 10) n++;
  }
}
