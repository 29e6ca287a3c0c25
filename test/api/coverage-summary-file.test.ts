// The coverage page over a compacted day reads one summary file per family-day and a census of the
// logs (issue 34 §4, "cost, not count"), not each log's folder and the partitions' manifests. Shown
// on real files and a real server: compaction writes both; with the closed day's logs zeroed in
// place a cold page answers what reading every log and partition said, and the cache stamps no log
// (the old code listed and stat-ed each one); a tampered but well-formed summary is what the page
// serves while its manifests hold (so it is what is read); a damaged summary or census (a
// flipped byte, a truncated file) is not trusted and the page falls back to the logs and manifests
// (same answer, never a 5xx); a summary made stale by a rebuilt partition is not trusted even when
// it is well-formed; a write into a compacted day's log after the census (the day journal) is seen.

import t from 'tap';
import {
  closeSync,
  cpSync,
  existsSync,
  rmSync,
  openSync,
  readFileSync,
  renameSync,
  statSync,
  utimesSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { createHash } from 'node:crypto';
import { dirname, join } from 'node:path';
import { CoverageCache } from '../../src/api/query/coverage.js';
import { compactDay, logFilePath } from '../../src/storage/testing.js';
import { utcDay } from '../../src/schema/time.js';
import { bookRecords, tmpDataDir, writeLog } from './helpers.js';
import { coldCoveragePage as coldPage, readSpans, spanReader, writeMarkets, type Spans } from './coverage-fixtures.js';
import type { Test } from 'tap';

const DAY_MS = 86_400_000;
const closed = ['sf-a', 'sf-b', 'sf-c'];
const day = utcDay(Date.now() - 2 * DAY_MS);
const t0 = Date.parse(`${day}T10:00:00.000Z`);
const summaryFile = (dir: string): string => join(dir, '_coverage', 'family=coin', `${day}.json`);
const manifestOf = (dir: string, dataset: string): string =>
  join(dir, 'parquet', 'family=coin', `dataset=${dataset}`, `date=${day}`, '_manifest.json');

/** A data dir (its own: the process-wide Parquet store is per dir) with a compacted closed day. */
async function setup(t: Test): Promise<{ dir: string; want: Record<string, Spans> }> {
  const dir = tmpDataDir(t);
  await writeMarkets(dir, closed, { t0, spreadMs: 1000, n: 20, nStep: 9, cpEvery: 10 });
  t.ok((await compactDay(dir, day)).length > 0, 'the closed day compacted (logs kept)');
  const want: Record<string, Spans> = {};
  for (const id of closed) want[id] = await readSpans(dir, id);
  return { dir, want };
}

/** Overwrites a file in place with bytes of the same length (its mtime kept to the millisecond). */
function overwriteKeepingStamp(path: string, fill: (size: number) => Buffer): void {
  const st = statSync(path);
  const fd = openSync(path, 'r+');
  writeSync(fd, fill(st.size), 0, st.size, 0);
  closeSync(fd);
  utimesSync(path, st.atime, st.mtime);
}

t.test('compaction writes the summary and the census; a page uses them and nothing per log', async (t) => {
  const { dir, want } = await setup(t);
  t.ok(existsSync(summaryFile(dir)), 'the family-day summary exists');
  t.ok(existsSync(join(dir, '_coverage', 'family=coin', 'census-books.json')), 'and the census of the books logs');

  // The books logs zeroed in place (same size): what compaction read, as far as a stat can tell.
  // (The catalogue logs stay: the list of markets itself is read from them.)
  for (const id of closed)
    overwriteKeepingStamp(logFilePath(dir, { family: 'coin', stream: 'books', market: id }, day), (n) => Buffer.alloc(n));
  const page = await coldPage(t, dir);
  t.equal(page.status, 200);
  t.same(page.spans, want, 'a cold page answers what reading said before (the logs were not read)');

  // And the cache stamped no log of the closed day (the census knew them).
  const cache = new CoverageCache(dir, null);
  for (const id of closed) t.same((await cache.get('coin', id, spanReader(dir, id), false)).datasets, want[id], id);
  t.equal(cache.stamps, 0, 'no log listed or stat-ed');
});

t.test('a damaged summary or census is not trusted: the same answer, from the logs and manifests', async (t) => {
  const { dir, want } = await setup(t);
  const text = readFileSync(summaryFile(dir), 'utf8');
  const at = text.indexOf('"last');
  writeFileSync(summaryFile(dir), text.slice(0, 100) + (text[100] === '1' ? '2' : '1') + text.slice(101)); // one byte flipped
  let page = await coldPage(t, dir);
  t.equal(page.status, 200);
  t.same(page.spans, want, 'a flipped byte: the same answer');
  writeFileSync(summaryFile(dir), text.slice(0, Math.max(at, 200)));
  for (const s of ['books', 'catalog']) {
    const c = join(dir, '_coverage', 'family=coin', `census-${s}.json`);
    writeFileSync(c, readFileSync(c, 'utf8').slice(0, 150));
  }
  page = await coldPage(t, dir);
  t.equal(page.status, 200);
  t.same(page.spans, want, 'a truncated summary and census: the same answer');
  writeFileSync(summaryFile(dir), 'not json at all\n{');
  page = await coldPage(t, dir);
  t.same(page, { status: 200, spans: want }, 'garbage: the same answer');
});

t.test('a well-formed summary is trusted only while its manifests are the ones published', async (t) => {
  const { dir, want } = await setup(t);
  // A summary that says something else, properly checksummed: served while its manifests hold
  // (proof the page reads it), not once a partition was republished (a rebuild renames a new one in).
  const text = readFileSync(summaryFile(dir), 'utf8');
  const body = JSON.parse(text.slice(65)) as { streams: { books: { markets: Record<string, number[]> } } };
  body.streams.books.markets['sf-a'][3] += 60_000;
  const raw = JSON.stringify(body);
  writeFileSync(summaryFile(dir), `${createHash('sha256').update(raw).digest('hex')}\n${raw}\n`);
  const tampered = (await coldPage(t, dir)).spans as Record<string, { books: { last_time: string } }>;
  const last = Date.parse((want['sf-a'].books as { last_time: string }).last_time);
  t.equal(tampered['sf-a'].books.last_time, new Date(last + 60_000).toISOString(), 'the summary is what the page reads');

  // The same partition republished as compaction publishes one: a new folder renamed in.
  const part = dirname(manifestOf(dir, 'book_changes'));
  cpSync(part, `${part}.new`, { recursive: true });
  renameSync(part, `${part}.old`);
  renameSync(`${part}.new`, part);
  rmSync(`${part}.old`, { recursive: true });
  t.same((await coldPage(t, dir)).spans, want, 'republished: the stale summary is not trusted');
});

t.test("a write into a compacted day's log after the census is seen (the day journal)", async (t) => {
  const { dir, want } = await setup(t);
  t.same((await coldPage(t, dir)).spans, want);
  // A late record into the closed day (as an import would write it), through the real writer.
  await writeLog(dir, 'coin', 'books', 'sf-a', bookRecords(['sf-a-up'], { start: t0 + 3_600_000, n: 3, stepMs: 100, seed: 5 }));
  const now = await readSpans(dir, 'sf-a');
  t.not((now.books as { last_time: string }).last_time, (want['sf-a'].books as { last_time: string }).last_time, 'the log grew');
  t.same((await coldPage(t, dir)).spans['sf-a'], now, 'a cold page answers the new last record');
});
