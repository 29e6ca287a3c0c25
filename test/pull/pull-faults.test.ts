// `pmtape pull` as a child process against small faulty or hostile servers: refusals (401, 403,
// 404) and lies (sha256, size) fail their file by name, leave nothing partial and let the others
// finish; paths leaving the output folder are refused; a cut or killed transfer resumes with Range.

import t from 'tap';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createServer, type AddressInfo } from 'node:net';
import { runCli, runCliOnce, tempDir, waitFor } from '../selfhost/helpers.js';
import { bytes, fakeServer, sha256, summaryOf, type FakeFile } from './fake-server.js';

const P = (name: string): string => `family=coin/dataset=books/date=2026-07-26/${name}.parquet`;
const partOf = (out: string, path: string): string => join(out, path.replace(/([^/]+)$/, '_$1.part'));

/** Every file under `dir`, relative. */
function tree(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name).slice(dir.length + 1)).sort();
}

t.test('refusals and lies fail their file by name, leave nothing partial, and the others complete', async (t) => {
  const good = bytes(50_000, 1);
  const files: FakeFile[] = [
    { path: P('good'), body: good },
    { path: P('missing'), body: bytes(10, 2), status: 404 },
    { path: P('unauthorized'), body: bytes(10, 3), status: 401 },
    { path: P('plan'), body: bytes(10, 4), status: 403 },
    { path: P('liar'), body: bytes(30_000, 5), listedSha: sha256(bytes(30_000, 6)) },
    { path: P('too-long'), body: bytes(30_000, 7), listedBytes: 1000 },
  ];
  const { url } = await fakeServer(t, files);
  const out = join(tempDir(t, 'pmtape-pull-'), 'mirror');
  const r = await runCliOnce(['pull', url, '--key', 'k', '--out', out, '--concurrency', '3']);
  t.equal(r.code, 1, 'exit code is non-zero');
  const sum = summaryOf(r.stdout);
  t.same({ ...sum, bytes: 0 }, { files: 6, downloaded: 1, skipped: 0, bytes: 0, failed: 5 });
  // `bytes` counts what came over the network: the liar's whole body too, never more than listed.
  t.ok(sum.bytes >= good.length + 30_000 && sum.bytes <= good.length + 30_000 + 1000, `bytes received (${sum.bytes})`);
  for (const [name, why] of [['missing', /404/], ['unauthorized', /401/], ['plan', /403/], ['liar', /sha256 mismatch/], ['too-long', /more than the 1000 bytes/]] as const) {
    t.match(r.stderr, new RegExp(`failed ${P(name).replaceAll('.', '\\.')}: .*${why.source}`), `stderr names ${name} and why`);
  }
  t.same(tree(out), ['.pmtape-pull.json', P('good')], 'only the verified file and the sidecar: no partial file, no staging name');
  t.ok(readFileSync(join(out, P('good'))).equals(good));
});

t.test('a path that would leave the output folder is refused; nothing is written outside it', async (t) => {
  const base = tempDir(t, 'pmtape-pull-');
  const out = join(base, 'a', 'mirror');
  const good = bytes(1000, 9);
  const hostile = ['../evil.parquet', 'family=coin/../../../evil2.parquet', '/tmp/pmtape-evil-abs.parquet', 'family=coin/_trick.parquet.part', 'family=coin/.pmtape-pull.json', 'family=coin//x.parquet', 'family=coin\\..\\x.parquet'];
  const { url, requests } = await fakeServer(t, [...hostile.map((path) => ({ path, body: bytes(10, 1) })), { path: P('fine'), body: good }]);
  const r = await runCliOnce(['pull', url, '--out', out], { env: { PMTAPE_KEY: 'k' } });
  t.equal(r.code, 1);
  t.same(summaryOf(r.stdout), { files: hostile.length + 1, downloaded: 1, skipped: 0, bytes: good.length, failed: hostile.length });
  for (const h of hostile) t.match(r.stderr, `failed ${h}: refused`, `${h} is refused by name`);
  t.same(tree(base), ['a/mirror/.pmtape-pull.json', `a/mirror/${P('fine')}`], 'nothing outside the mirror, nothing hostile inside');
  t.notOk(existsSync('/tmp/pmtape-evil-abs.parquet'));
  t.same(requests.map((q) => q.path), [P('fine')], 'a refused path is never even requested');
  t.equal(requests[0].headers.authorization, 'Bearer k', 'PMTAPE_KEY is sent as the bearer key');
});

t.test('a transfer cut mid-body is resumed in the same run with Range and If-Range', async (t) => {
  const body = bytes(200_000, 11);
  const { url, requests } = await fakeServer(t, [{ path: P('cut'), body, cutAfter: 70_000 }]);
  const out = tempDir(t, 'pmtape-pull-');
  const r = await runCliOnce(['pull', url, '--key', 'k', '--out', out]);
  t.equal(r.code, 0, r.stderr);
  t.same(summaryOf(r.stdout), { files: 1, downloaded: 1, skipped: 0, bytes: body.length, failed: 0 });
  t.equal(requests.length, 2);
  t.notOk(requests[0].headers.range, 'the first request asks for the whole file');
  t.equal(requests[1].headers.range, 'bytes=70000-', 'the retry asks only for the rest');
  t.equal(requests[1].headers['if-range'], `"${sha256(body)}"`, 'guarded by the ETag of the first response');
  t.ok(readFileSync(join(out, P('cut'))).equals(body));
  t.match(r.stderr, /broke off after 70000 of 200000 bytes|ended after 70000 of 200000/);
});

t.test('a pull killed mid-transfer resumes with Range on the next run; a file changed meanwhile starts over', async (t) => {
  const body = bytes(300_000, 21);
  const other = bytes(10_000, 22);
  const files: FakeFile[] = [{ path: P('slow'), body, stallAfter: 64_000 }, { path: P('changes'), body: bytes(120_000, 23), stallAfter: 30_000 }];
  const { url, requests } = await fakeServer(t, files);
  const out = tempDir(t, 'pmtape-pull-');
  const child = runCli(t, ['pull', url, '--key', 'k', '--out', out]);
  const staged = await waitFor(async () => existsSync(partOf(out, P('slow'))) && statSync(partOf(out, P('slow'))).size === 64_000
    && existsSync(partOf(out, P('changes'))) && statSync(partOf(out, P('changes'))).size === 30_000, 60_000);
  t.ok(staged, 'both downloads are staged mid-transfer');
  child.proc.kill('SIGKILL');
  t.equal(await child.exited, 'SIGKILL');
  t.notOk(existsSync(join(out, P('slow'))), 'nothing under the published name');

  files[0].stallAfter = undefined;
  files[1] = { path: P('changes'), body: other }; // the server's file changed while we were away
  requests.length = 0;
  const r = await runCliOnce(['pull', url, '--key', 'k', '--out', out]);
  t.equal(r.code, 0, r.stderr);
  const slow = requests.find((q) => q.path === P('slow'))!;
  t.equal(slow.headers.range, 'bytes=64000-', 'the second run asks for the rest only');
  t.equal(slow.headers['if-range'], `"${sha256(body)}"`);
  const changed = requests.find((q) => q.path === P('changes'))!;
  t.notOk(changed.headers.range, 'the listing gives a new sha256: the staged prefix is dropped, not resumed');
  t.same(summaryOf(r.stdout), { files: 2, downloaded: 2, skipped: 0, bytes: body.length - 64_000 + other.length, failed: 0 });
  t.ok(readFileSync(join(out, P('slow'))).equals(body), 'the resumed file is exact');
  t.ok(readFileSync(join(out, P('changes'))).equals(other), 'the changed file is the new one, whole');
  t.same(tree(out), ['.pmtape-pull.json', P('changes'), P('slow')], 'no staging file left');
});

t.test('429 waits for Retry-After, then the file downloads', async (t) => {
  const body = bytes(5000, 31);
  const { url, requests } = await fakeServer(t, [{ path: P('busy'), body, rateLimitFirst: 1 }]);
  const out = tempDir(t, 'pmtape-pull-');
  const r = await runCliOnce(['pull', url, '--key', 'k', '--out', out]);
  t.equal(r.code, 0, r.stderr);
  t.equal(requests.length, 2);
  t.ok(requests[1].atMs - requests[0].atMs >= 900, `waited for Retry-After: 1 (${requests[1].atMs - requests[0].atMs} ms)`);
  t.ok(readFileSync(join(out, P('busy'))).equals(body));
});

t.test('bad flags are usage errors (exit 2); an unreachable server exits 1 naming it', async (t) => {
  const out = tempDir(t, 'pmtape-pull-');
  // A port that was just free: nothing listens there.
  const probe = createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  const closed = `http://127.0.0.1:${(probe.address() as AddressInfo).port}`;
  await new Promise((r) => probe.close(r));
  t.equal((await runCliOnce(['pull', 'ftp://x', '--out', out])).code, 2);
  t.equal((await runCliOnce(['pull', closed, '--out', out, '--concurrency', '0'])).code, 2);
  const r = await runCliOnce(['pull', closed, '--out', out, '--retries', '0']);
  t.equal(r.code, 1);
  t.match(r.stderr, /ECONNREFUSED/);
  t.same(summaryOf(r.stdout), { files: 0, downloaded: 0, skipped: 0, bytes: 0, failed: 0 });
});
