// A real `pmtape serve` process for the client tests: seeded data dir, keys, ephemeral port, the
// `ready <url>` line awaited, SIGTERM at teardown. Also a TCP proxy that cuts its first connection
// after some bytes, to drop a replay mid-stream.

import { spawn } from 'node:child_process';
import net from 'node:net';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { Tap } from '../api/helpers.js';

export const here = dirname(fileURLToPath(import.meta.url));
/** dist/cli.js, next to the compiled tests. */
export const CLI = join(here, '..', '..', 'cli.js');

export async function startServe(t: Tap, dataDir: string, env: Record<string, string> = {}): Promise<string> {
  const proc = spawn(process.execPath, [CLI, 'serve', '--data-dir', dataDir, '--port', '0'], {
    env: { ...process.env, PMTAPE_LOG_LEVEL: 'warn', PMTAPE_RATE_LIMITS: 'off', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.teardown(() => {
    if (proc.exitCode === null) proc.kill('SIGTERM');
  });
  let stderr = '';
  proc.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-2000)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve did not start: ${stderr}`)), 60_000);
    createInterface({ input: proc.stdout }).on('line', (l) => {
      const m = /^ready (\S+)/.exec(l);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    proc.on('exit', (code) => reject(new Error(`serve exited ${code}: ${stderr}`)));
  });
}

/** A loopback proxy to `target`; its first connection is destroyed once `cutAfter` bytes came back. */
export async function cuttingProxy(t: Tap, target: string, cutAfter: number): Promise<{ url: string; cuts: () => number }> {
  const { hostname, port } = new URL(target);
  let cut = 0;
  let first = true;
  const open = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const cutThis = first;
    first = false;
    const up = net.connect(Number(port), hostname);
    open.add(client).add(up);
    client.on('close', () => open.delete(client));
    up.on('close', () => open.delete(up));
    client.pipe(up);
    let n = 0;
    up.on('data', (d: Buffer) => {
      n += d.length;
      if (cutThis && n > cutAfter) {
        cut++;
        client.write(d.subarray(0, d.length - (n - cutAfter)));
        client.destroy();
        up.destroy();
        return;
      }
      client.write(d);
    });
    up.on('end', () => client.end());
    up.on('error', () => client.destroy());
    client.on('error', () => up.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  // Kept-alive connections would hold close() open for the server's keep-alive timeout (72 s).
  t.teardown(
    () =>
      new Promise<void>((r) => {
        server.close(() => r());
        for (const s of open) s.destroy();
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`, cuts: () => cut };
}

/** GET helpers that bypass the clients: one JSON answer, and every item of a paged route (following next_cursor). */
export function rawApi(base: string, key: string): { raw: (path: string) => Promise<any>; rawPages: (path: string) => Promise<any[]> } {
  const raw = async (path: string): Promise<any> => (await fetch(base + path, { headers: { authorization: `Bearer ${key}` } })).json();
  const rawPages = async (path: string): Promise<any[]> => {
    const out: any[] = [];
    for (let url: string | null = path; url;) {
      const page: any = await raw(url);
      out.push(...page.data);
      url = page.next_cursor ? `${path}&cursor=${encodeURIComponent(page.next_cursor)}` : null;
    }
    return out;
  };
  return { raw, rawPages };
}
