// The two local rules of `pmtape pull`, in process: which listed paths may be written (and where
// their downloads are staged), and when the sidecar's record of a verified file is still trusted.

import t from 'tap';
import { appendFileSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { rename } from 'node:fs/promises';
import { join, sep } from 'node:path';
import { fileUrlPath, localPaths } from '../../src/pull/paths.js';
import { PullCache } from '../../src/pull/cache.js';
import { retryAfterMs } from '../../src/pull/client.js';
import { tempDir } from '../selfhost/helpers.js';
import { flipByteKeepTimes } from './fake-server.js';

t.test('listed paths map under DIR; anything that could leave it or collide with our names is refused', async (t) => {
  const out = tempDir(t, 'pmtape-pull-');
  const ok = localPaths(out, 'family=coin/dataset=books/date=2026-07-26/books-2026-07-26.parquet');
  t.same(ok, {
    dest: join(out, 'family=coin', 'dataset=books', 'date=2026-07-26', 'books-2026-07-26.parquet'),
    part: join(out, 'family=coin', 'dataset=books', 'date=2026-07-26', '_books-2026-07-26.parquet.part'),
  });
  for (const bad of [
    '',
    '..',
    '../x.parquet',
    'a/../../x',
    'a/./b',
    '/etc/passwd',
    'a//b',
    'a/b/',
    'a\\..\\b',
    '_x.parquet',
    'a/.hidden',
    '.pmtape-pull.json',
    'a/b\u0000.parquet',
    'a/b c.parquet',
    'x'.repeat(1100),
    'C:\\x',
    42,
    null,
  ]) {
    const got = localPaths(out, bad);
    t.type(got, 'string', `${JSON.stringify(bad)?.slice(0, 40)} is refused (${JSON.stringify(got).slice(0, 60)})`);
  }
  t.equal(fileUrlPath('family=coin/dataset=books/date=2026-07-26/a b.parquet'), 'family=coin/dataset=books/date=2026-07-26/a%20b.parquet');
  t.notOk(
    String((ok as { dest: string }).dest)
      .split(sep)
      .includes('..'),
  );
});

t.test('a verified file is trusted only while size, mtime, ctime and inode are unchanged', async (t) => {
  const out = tempDir(t, 'pmtape-pull-');
  const file = join(out, 'f.parquet');
  const sha = 'ab'.repeat(32);
  writeFileSync(file, 'PAR1 some bytes PAR1');
  const cache = await PullCache.open(out);
  await cache.setVerified('f.parquet', file, sha);
  t.ok(await cache.trusts('f.parquet', file, sha), 'unchanged: trusted');
  t.notOk(await cache.trusts('f.parquet', file, 'cd'.repeat(32)), 'the listing now gives another sha256: not trusted');
  await cache.close();
  const reopened = await PullCache.open(out);
  t.ok(await reopened.trusts('f.parquet', file, sha), 'the sidecar survives the process');

  // One byte flipped, same size, mtime put back: only the ctime tells.
  const before = statSync(file, { bigint: true });
  flipByteKeepTimes(file, 6);
  const after = statSync(file, { bigint: true });
  t.equal(after.mtimeNs, before.mtimeNs, 'mtime is back to the nanosecond');
  t.equal(after.size, before.size);
  t.notOk(await reopened.trusts('f.parquet', file, sha), 'a rewritten file is not trusted');

  await reopened.setVerified('f.parquet', file, sha);
  appendFileSync(file, 'x');
  t.notOk(await reopened.trusts('f.parquet', file, sha), 'a grown file is not trusted');
  await reopened.setVerified('f.parquet', file, sha);
  const copy = join(out, 'g.parquet');
  writeFileSync(copy, readFileSync(file));
  await rename(copy, file);
  t.notOk(await reopened.trusts('f.parquet', file, sha), 'another file renamed over it is not trusted');
  await reopened.close();

  writeFileSync(join(out, '.pmtape-pull.json'), '{"version": 1, "verified": ');
  const damaged = await PullCache.open(out);
  t.notOk(await damaged.trusts('f.parquet', file, sha), 'a damaged sidecar trusts nothing (and does not throw)');
});

t.test('Retry-After is read as seconds or an HTTP date, and capped', async (t) => {
  const now = Date.parse('2026-07-26T12:00:00Z');
  t.equal(retryAfterMs('3', now), 3000);
  t.equal(retryAfterMs('Sun, 26 Jul 2026 12:00:10 GMT', now), 10_000);
  t.equal(retryAfterMs('86400', now), 120_000);
  t.equal(retryAfterMs('soon', now), null);
  t.equal(retryAfterMs(null, now), null);
});
