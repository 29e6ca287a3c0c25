// `pmtape pull` as a child process against small faulty or hostile servers: refusals (401, 403,
// 404, a redirect) and lies (sha256, size) fail their file by name, leave nothing partial and let
// the others finish; paths leaving the output folder are refused; usage errors exit 2.

import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createServer, type AddressInfo } from 'node:net';
import { runCliOnce, tempDir } from '../selfhost/helpers.js';
import { bytes, fakeServer, P, sha256, summaryOf, tree, type FakeFile } from './fake-server.js';

// Generous bounds: six engineers share two cores, and every run is a fresh node process.
t.setTimeout(300_000);
const SLOW = { timeoutMs: 150_000 };

t.test('refusals and lies fail their file by name, leave nothing partial, and the others complete', async (t) => {
  const good = bytes(50_000, 1);
  const files: FakeFile[] = [
    { path: P('good'), body: good },
    { path: P('empty'), body: Buffer.alloc(0) },
    { path: P('missing'), body: bytes(10, 2), status: 404 },
    { path: P('unauthorized'), body: bytes(10, 3), status: 401 },
    { path: P('plan'), body: bytes(10, 4), status: 403 },
    { path: P('liar'), body: bytes(30_000, 5), listedSha: sha256(bytes(30_000, 6)) },
    { path: P('too-long'), body: bytes(30_000, 7), listedBytes: 1000 },
  ];
  const { url } = await fakeServer(t, files);
  const out = join(tempDir(t, 'pmtape-pull-'), 'mirror');
  const r = await runCliOnce(['pull', url, '--key', 'k', '--out', out, '--concurrency', '3'], SLOW);
  t.equal(r.code, 1, 'exit code is non-zero');
  const sum = summaryOf(r.stdout);
  t.same({ ...sum, bytes: 0 }, { files: 7, downloaded: 2, skipped: 0, bytes: 0, failed: 5 });
  // `bytes` counts what came over the network: the liar's whole body too, never more than listed.
  t.ok(sum.bytes >= good.length + 30_000 && sum.bytes <= good.length + 30_000 + 1000, `bytes received (${sum.bytes})`);
  for (const [name, why] of [
    ['missing', /404/],
    ['unauthorized', /401/],
    ['plan', /403/],
    ['liar', /sha256 mismatch/],
    ['too-long', /more than the 1000 bytes/],
  ] as const) {
    t.match(r.stderr, new RegExp(`failed ${P(name).replaceAll('.', '\\.')}: .*${why.source}`), `stderr names ${name} and why`);
  }
  t.same(
    tree(out),
    ['.pmtape-pull.json', P('empty'), P('good')],
    'only the verified files and the sidecar: no partial file, no staging name',
  );
  t.equal(readFileSync(join(out, P('empty'))).length, 0, 'an empty file is mirrored too');
  t.ok(readFileSync(join(out, P('good'))).equals(good));
});

t.test('a path that would leave the output folder is refused; nothing is written outside it', async (t) => {
  const base = tempDir(t, 'pmtape-pull-');
  const out = join(base, 'a', 'mirror');
  const good = bytes(1000, 9);
  const hostile = [
    '../evil.parquet',
    'family=coin/../../../evil2.parquet',
    '/tmp/pmtape-evil-abs.parquet',
    'family=coin/_trick.parquet.part',
    'family=coin/.pmtape-pull.json',
    'family=coin//x.parquet',
    'family=coin\\..\\x.parquet',
  ];
  const { url, requests } = await fakeServer(t, [
    ...hostile.map((path) => ({ path, body: bytes(10, 1) })),
    { path: P('fine'), body: good },
  ]);
  const r = await runCliOnce(['pull', url, '--out', out], { ...SLOW, env: { PMTAPE_KEY: 'k' } });
  t.equal(r.code, 1);
  t.same(summaryOf(r.stdout), { files: hostile.length + 1, downloaded: 1, skipped: 0, bytes: good.length, failed: hostile.length });
  for (const h of hostile) t.match(r.stderr, `failed ${h}: refused`, `${h} is refused by name`);
  t.same(tree(base), ['a/mirror/.pmtape-pull.json', `a/mirror/${P('fine')}`], 'nothing outside the mirror, nothing hostile inside');
  t.notOk(existsSync('/tmp/pmtape-evil-abs.parquet'));
  t.same(
    requests.map((q) => q.path),
    [P('fine')],
    'a refused path is never even requested',
  );
  t.equal(requests[0].headers.authorization, 'Bearer k', 'PMTAPE_KEY is sent as the bearer key');
});

t.test('bad flags are usage errors (exit 2); an unreachable server exits 1 naming it', async (t) => {
  const out = tempDir(t, 'pmtape-pull-');
  // A port that was just free: nothing listens there.
  const probe = createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  const closed = `http://127.0.0.1:${(probe.address() as AddressInfo).port}`;
  await new Promise((r) => probe.close(r));
  t.equal((await runCliOnce(['pull', 'ftp://x', '--out', out], SLOW)).code, 2);
  t.equal((await runCliOnce(['pull', closed, '--out', out, '--concurrency', '0'], SLOW)).code, 2);
  const badDay = await runCliOnce(['pull', closed, '--out', out, '--start-date', '2026-02-30'], SLOW);
  t.equal(badDay.code, 2);
  t.match(badDay.stderr, /--start-date must be a UTC day/);
  const r = await runCliOnce(['pull', closed, '--out', out, '--retries', '0'], SLOW);
  t.equal(r.code, 1);
  t.match(r.stderr, /ECONNREFUSED/);
  t.same(summaryOf(r.stdout), { files: 0, downloaded: 0, skipped: 0, bytes: 0, failed: 0 });
});

t.test('a redirect is not followed (the key would go along): the file fails naming the target', async (t) => {
  const { createServer: http } = await import('node:http');
  const server = http((req, res) => {
    if (req.url?.startsWith('/v3/datasets?')) {
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({
          data: [{ path: P('moved'), rows: 1, bytes: 3, sha256: 'a'.repeat(64), min_time: null, max_time: null }],
          next_cursor: null,
        }),
      );
    } else res.writeHead(302, { location: 'http://elsewhere.example/x' }).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise((r) => server.close(r)));
  const out = tempDir(t, 'pmtape-pull-');
  const r = await runCliOnce(['pull', `http://127.0.0.1:${(server.address() as AddressInfo).port}`, '--key', 'k', '--out', out], SLOW);
  t.equal(r.code, 1);
  t.match(r.stderr, `failed ${P('moved')}: HTTP 302: the server redirects to http://elsewhere.example/x`);
  t.same(tree(out), ['.pmtape-pull.json']);
});
