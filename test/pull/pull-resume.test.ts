// `pmtape pull` as a child process against small faulty servers: a transfer cut mid-body resumes
// in the same run, a pull killed (SIGKILL) or interrupted (SIGINT) resumes with Range on the next
// run, and 429 waits for Retry-After.

import t from 'tap';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { runCli, runCliOnce, tempDir, waitFor } from '../selfhost/helpers.js';
import { bytes, fakeServer, P, partOf, sha256, summaryOf, tree, type FakeFile } from './fake-server.js';

// Generous bounds: six engineers share two cores, and every run is a fresh node process.
t.setTimeout(300_000);
const SLOW = { timeoutMs: 150_000 };

t.test('a transfer cut mid-body is resumed in the same run with Range and If-Range', async (t) => {
  const body = bytes(200_000, 11);
  const { url, requests } = await fakeServer(t, [{ path: P('cut'), body, cutAfter: 70_000 }]);
  const out = tempDir(t, 'pmtape-pull-');
  const r = await runCliOnce(['pull', url, '--key', 'k', '--out', out], SLOW);
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
  const files: FakeFile[] = [
    { path: P('slow'), body, stallAfter: 64_000 },
    { path: P('changes'), body: bytes(120_000, 23), stallAfter: 30_000 },
  ];
  const { url, requests } = await fakeServer(t, files);
  const out = tempDir(t, 'pmtape-pull-');
  const child = runCli(t, ['pull', url, '--key', 'k', '--out', out]);
  const staged = await waitFor(
    async () =>
      existsSync(partOf(out, P('slow'))) &&
      statSync(partOf(out, P('slow'))).size === 64_000 &&
      existsSync(partOf(out, P('changes'))) &&
      statSync(partOf(out, P('changes'))).size === 30_000,
    120_000,
  );
  t.ok(staged, 'both downloads are staged mid-transfer');
  child.proc.kill('SIGKILL');
  t.equal(await child.exited, 'SIGKILL');
  t.notOk(existsSync(join(out, P('slow'))), 'nothing under the published name');

  files[0].stallAfter = undefined;
  files[1] = { path: P('changes'), body: other }; // the server's file changed while we were away
  requests.length = 0;
  const r = await runCliOnce(['pull', url, '--key', 'k', '--out', out], SLOW);
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
  const r = await runCliOnce(['pull', url, '--key', 'k', '--out', out], SLOW);
  t.equal(r.code, 0, r.stderr);
  t.equal(requests.length, 2);
  t.ok(requests[1].atMs - requests[0].atMs >= 900, `waited for Retry-After: 1 (${requests[1].atMs - requests[0].atMs} ms)`);
  t.ok(readFileSync(join(out, P('busy'))).equals(body));
});

t.test('SIGINT stops a pull: summary printed, exit 1, the staged bytes kept for the next run', async (t) => {
  const body = bytes(100_000, 41);
  const files: FakeFile[] = [{ path: P('interrupted'), body, stallAfter: 40_000 }];
  const { url, requests } = await fakeServer(t, files);
  const out = tempDir(t, 'pmtape-pull-');
  const part = partOf(out, P('interrupted'));
  const child = runCli(t, ['pull', url, '--key', 'k', '--out', out]);
  t.ok(await waitFor(async () => existsSync(part) && statSync(part).size === 40_000, 120_000), 'the download is staged mid-transfer');
  child.proc.kill('SIGINT');
  t.equal(await child.exited, 1);
  t.same(summaryOf(child.stdout), { files: 1, downloaded: 0, skipped: 0, bytes: 40_000, failed: 1 });
  t.match(child.stderr, /interrupted/);
  t.equal(statSync(part).size, 40_000, 'the staged bytes stay');
  files[0].stallAfter = undefined;
  const r = await runCliOnce(['pull', url, '--key', 'k', '--out', out], SLOW);
  t.equal(r.code, 0, r.stderr);
  t.equal(requests[requests.length - 1].headers.range, 'bytes=40000-');
  t.ok(readFileSync(join(out, P('interrupted'))).equals(body));
});
