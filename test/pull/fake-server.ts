// A small faulty or hostile dataset server for the `pmtape pull` tests (node:http on 127.0.0.1,
// port 0): it lists the files it is given two per page, serves them with Range/If-Range/ETag like
// the real one, and on request cuts the connection, stalls mid-body, refuses, rate-limits or lies.

import { createHash } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { execFileSync } from 'node:child_process';
import { closeSync, existsSync, openSync, readdirSync, readSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';

export interface FakeFile {
  path: string;
  body: Buffer;
  /** What the listing says (defaults: the body's real size and sha256). */
  listedBytes?: number;
  listedSha?: string;
  /** Answer every request for this file with this status and the API's error envelope. */
  status?: number;
  /** Answer the first N requests with 429 and `Retry-After: 1`. */
  rateLimitFirst?: number;
  /** Send this many bytes of the file, then destroy the socket (once) or stall forever. */
  cutAfter?: number;
  stallAfter?: number;
}

export interface FakeRequest {
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly atMs: number;
}

export const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');
const etagOf = (f: FakeFile): string => `"${sha256(f.body)}"`;

interface TapLike {
  teardown(fn: () => unknown): void;
}

/** Starts the server; `files` may be changed between runs (a file that changed on the server). */
export async function fakeServer(t: TapLike, files: FakeFile[]): Promise<{ url: string; requests: FakeRequest[] }> {
  const requests: FakeRequest[] = [];
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/v3/datasets') {
      const from = Number(url.searchParams.get('cursor') ?? 0);
      const page = files.slice(from, from + 2).map((f) => ({
        path: f.path,
        rows: 1,
        bytes: f.listedBytes ?? f.body.length,
        sha256: f.listedSha ?? sha256(f.body),
        min_time: null,
        max_time: null,
      }));
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ data: page, next_cursor: from + 2 < files.length ? String(from + 2) : null }));
      return;
    }
    const path = decodeURIComponent(url.pathname.replace(/^\/v3\/datasets\/files\//, ''));
    requests.push({ path, headers: req.headers, atMs: Date.now() });
    const f = files.find((x) => x.path === path);
    const status = !f ? 404 : (f.status ?? (f.rateLimitFirst && f.rateLimitFirst-- > 0 ? 429 : 200));
    if (status !== 200 || !f) {
      if (status === 429) res.setHeader('retry-after', '1');
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { status, code: `code_${status}`, message: `fake ${status} for ${path}`, request_id: 'x' } }));
      return;
    }
    const etag = etagOf(f);
    const m = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
    const ifRange = req.headers['if-range'];
    const start = m && (!ifRange || ifRange === etag) ? Number(m[1]) : 0;
    const headers = {
      etag,
      'accept-ranges': 'bytes',
      'content-type': 'application/vnd.apache.parquet',
      'content-length': String(f.body.length - start),
    };
    if (start > 0) res.writeHead(206, { ...headers, 'content-range': `bytes ${start}-${f.body.length - 1}/${f.body.length}` });
    else res.writeHead(200, headers);
    if (f.cutAfter !== undefined) {
      const n = f.cutAfter;
      f.cutAfter = undefined;
      res.write(f.body.subarray(start, n), () => setTimeout(() => res.socket?.destroy(), 50));
      return;
    }
    if (f.stallAfter !== undefined) {
      res.write(f.body.subarray(start, f.stallAfter)); // and never more: the client is killed meanwhile
      return;
    }
    res.end(f.body.subarray(start));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => {
    server.closeAllConnections();
    return new Promise((r) => server.close(() => r(undefined)));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests };
}

/** Deterministic pseudo-random bytes, so a resumed prefix from the wrong body would be caught. */
export function bytes(n: number, seed: number): Buffer {
  const b = Buffer.alloc(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    b[i] = s >>> 24;
  }
  return b;
}

/** The JSON summary `pmtape pull` prints last on stdout. */
export function summaryOf(stdout: string): { files: number; downloaded: number; skipped: number; bytes: number; failed: number } {
  const last = stdout.trim().split('\n').pop() ?? '';
  return JSON.parse(last) as ReturnType<typeof summaryOf>;
}

/** A listed path in the layout the real server uses. */
export const P = (name: string): string => `family=coin/dataset=books/date=2026-07-26/${name}.parquet`;
/** Where pull stages the download of `path` under `out`. */
export const partOf = (out: string, path: string): string => join(out, path.replace(/([^/]+)$/, '_$1.part'));

/** Every file under `dir`, relative. */
export function tree(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name).slice(dir.length + 1))
    .sort();
}

/**
 * Flips one byte of `file` in place and sets its atime and mtime back to the nanosecond (through
 * `touch -r` from a copy made with `cp -p`): only the ctime, which no user call sets, still tells.
 */
export function flipByteKeepTimes(file: string, at: number): void {
  const ref = `${file}.times`;
  execFileSync('cp', ['-p', file, ref]);
  const fd = openSync(file, 'r+');
  const b = Buffer.alloc(1);
  readSync(fd, b, 0, 1, at);
  b[0] ^= 0xff;
  writeSync(fd, b, 0, 1, at);
  closeSync(fd);
  execFileSync('touch', ['-r', ref, file]);
  unlinkSync(ref);
}
