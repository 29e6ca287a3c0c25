// `pmtape pull` against a hostile or broken listing (real sockets, the real CLI as a child): an
// endless body stops at --max-listing-bytes, endless fresh cursors stop at --max-listing-pages, and a
// listing that stalls (before its headers or mid-body) is retried after --idle-timeout like a
// stalled transfer. Each exits 1 naming the cap and the flag, leaving nothing behind.

import t from 'tap';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { runCliOnce, tempDir } from '../selfhost/helpers.js';
import { summaryOf, tree } from './fake-server.js';

t.setTimeout(300_000);
const SLOW = { timeoutMs: 150_000 };

/** A server whose `/v3/datasets` answers with `handler`; counts listing requests and bytes sent. */
async function listingServer(
  t: { teardown(fn: () => unknown): void },
  handler: (res: ServerResponse, n: number) => void,
): Promise<{ url: string; stats: { requests: number; bytes: number } }> {
  const stats = { requests: 0, bytes: 0 };
  const server = createServer((req, res) => {
    if (!req.url?.startsWith('/v3/datasets?')) {
      res.writeHead(404).end();
      return;
    }
    handler(res, ++stats.requests);
  });
  server.on('connection', (s) => {
    const write = s.write.bind(s);
    s.write = (chunk: string | Uint8Array, ...rest: never[]) => {
      stats.bytes += typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.length;
      return write(chunk, ...rest);
    };
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => {
    server.closeAllConnections();
    return new Promise((r) => server.close(() => r(undefined)));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, stats };
}

const ENTRY = JSON.stringify({ path: 'family=coin/dataset=books/date=2026-07-26/x.parquet', rows: 1, bytes: 1, sha256: '0'.repeat(64) });

t.test('an endless listing body stops at --max-listing-bytes: exit 1 naming the cap, memory never grows with the body', async (t) => {
  const { url, stats } = await listingServer(t, (res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write('{"data":[');
    const more = (): void => {
      // Backpressure-driven and never ending, as a hostile server would send.
      while (!res.destroyed && res.write(`${ENTRY},`.repeat(200)));
      if (!res.destroyed) res.once('drain', more);
    };
    res.on('close', () => res.removeAllListeners('drain'));
    more();
  });
  const out = join(tempDir(t, 'pmtape-pull-'), 'mirror');
  const r = await runCliOnce(['pull', url, '--out', out, '--key', 'k', '--max-listing-bytes', String(2 * 1024 * 1024)], SLOW);
  t.equal(r.code, 1);
  t.match(
    r.stderr,
    /the listing \/v3\/datasets is larger than 2097152 bytes in all: is http:\/\/127\.0\.0\.1:\d+ a pmtape server\? \(raise --max-listing-bytes if it is\)/,
  );
  t.same(summaryOf(r.stdout), { files: 0, downloaded: 0, skipped: 0, bytes: 0, failed: 0 });
  t.equal(stats.requests, 1, 'a body over the cap is not retried');
  // The server writes until the client stops reading; socket buffers hold a few MB at most.
  t.ok(stats.bytes < 64 * 1024 * 1024, `the client stopped reading (${stats.bytes} bytes sent)`);
  t.same(tree(out), [], 'nothing written');
});

t.test('endless distinct next_cursors stop at --max-listing-pages: exit 1 naming the cap', async (t) => {
  const { url, stats } = await listingServer(t, (res, n) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ data: [], next_cursor: `c${n}-${'x'.repeat(1000)}` }));
  });
  const out = join(tempDir(t, 'pmtape-pull-'), 'mirror');
  const r = await runCliOnce(['pull', url, '--out', out, '--max-listing-pages', '40'], SLOW);
  t.equal(r.code, 1);
  t.match(
    r.stderr,
    /\/v3\/datasets still had a next_cursor after 40 pages: is .* a pmtape server\? \(raise --max-listing-pages if it is\)/,
  );
  t.equal(stats.requests, 40, 'exactly the capped number of pages was asked for');
  // The byte cap counts every page together, so endless small pages also stop there.
  const r2 = await runCliOnce(['pull', url, '--out', out, '--max-listing-bytes', '20000'], SLOW);
  t.equal(r2.code, 1);
  t.match(r2.stderr, /larger than 20000 bytes in all/);
});

t.test('a stalled listing (no headers, or a body that stops) is retried after --idle-timeout, then gives up naming it', async (t) => {
  for (const how of ['no headers', 'mid-body'] as const) {
    const { url, stats } = await listingServer(t, (res) => {
      if (how === 'mid-body') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"data":[');
      }
      // ...and never another byte.
    });
    const out = join(tempDir(t, 'pmtape-pull-'), 'mirror');
    const r = await runCliOnce(['pull', url, '--out', out, '--idle-timeout', '0.3', '--retries', '1'], SLOW);
    t.equal(r.code, 1, how);
    t.match(r.stderr, /the listing \/v3\/datasets sent no data for 300 ms \(--idle-timeout\).*gave up after 1 retries/, how);
    t.equal(stats.requests, 2, `${how}: one try and one retry`);
  }
});

t.test('bad listing flags are usage errors', async (t) => {
  const out = tempDir(t, 'pmtape-pull-');
  for (const [flag, v] of [
    ['--idle-timeout', '0'],
    ['--idle-timeout', 'soon'],
    ['--max-listing-pages', '0'],
    ['--max-listing-bytes', '10'],
  ]) {
    const r = await runCliOnce(['pull', 'http://127.0.0.1:1', '--out', out, flag, v], SLOW);
    t.equal(r.code, 2, `${flag} ${v}`);
    t.match(r.stderr, flag);
  }
});
