// A cold coverage page over closed days sets no folder watch (issue 34 §4, "cost, not count"): the
// cache watches a live log (one with a day file since yesterday) so that it need not stamp it on
// every page, but a log of a closed day is only stamped every RECHECK_MS whatever a watch says, so
// a watch on it is set for nothing. The old code set one before the first stamp of every log and
// closed it right after (thousands of inotify watches set and removed by one cold page). Shown on
// real files and real watches: the answers equal what reading the logs and partitions says, no
// watch is set for the compacted day's logs, and a live log is still watched (an append to it is
// still reported, so its next page past the TTL re-reads it).

import t from 'tap';
import { CoverageCache } from '../../src/api/query/coverage.js';
import { LogChanges, type LogChangeSubscription, type LogKey } from '../../src/storage/index.js';
import { compactDay } from '../../src/storage/testing.js';
import { utcDay } from '../../src/schema/time.js';
import { bookRecords, tmpDataDir, writeLog } from './helpers.js';
import { spanReader, readSpans as direct, writeMarkets } from './coverage-fixtures.js';
import { waitFor } from '../selfhost/helpers.js';

const DAY_MS = 86_400_000;
const closed = ['cold-a', 'cold-b', 'cold-c'];
const live = 'cold-live';

/** Real folder watches, counted: which logs a watch was asked for. */
class CountedChanges extends LogChanges {
  readonly asked: string[] = [];
  override subscribe(key: LogKey, onChange: () => void): LogChangeSubscription | null {
    this.asked.push(`${key.stream}/${key.market}`);
    return super.subscribe(key, onChange);
  }
}

t.test('a cold page over a compacted day watches no closed log, and a live log is still watched', async (t) => {
  const dir = tmpDataDir(t);
  const day = utcDay(Date.now() - 2 * DAY_MS);
  const t0 = Date.parse(`${day}T10:00:00.000Z`);
  await writeMarkets(dir, closed, { t0, spreadMs: 1000, n: 20, nStep: 5 });
  t.ok((await compactDay(dir, day)).length > 0, 'the closed day compacted (its logs kept)');
  const now0 = Date.now() - 60_000;
  await writeMarkets(dir, [live], { t0: now0, spreadMs: 0, n: 15, nStep: 0 });

  let now = Date.now();
  const changes = new CountedChanges(dir);
  const cache = new CoverageCache(dir, changes, 1000, () => now);
  t.teardown(() => cache.close());
  const all = async (): Promise<void> => {
    for (const id of [...closed, live])
      t.same((await cache.get('coin', id, spanReader(dir, id), false)).datasets, await direct(dir, id), id);
  };
  await all();
  t.same(
    changes.asked.filter((k) => !k.endsWith(`/${live}`)),
    [],
    'no watch asked for a log of the closed day',
  );
  t.same(changes.asked.sort(), [`books/${live}`, `catalog/${live}`], 'the live logs are watched');
  t.equal(changes.watched, 2, 'and their watches are held');
  const reads = cache.reads;
  const stamps = cache.stamps;
  now += 5_000;
  await all();
  t.equal(cache.stamps, stamps, 'past the TTL, nothing is stamped again (closed: quiet; live: watched, unchanged)');
  await writeLog(dir, 'coin', 'books', live, bookRecords([`${live}-up`], { start: now0 + 30_000, n: 2, stepMs: 100, seed: 3 }));
  const ok = await waitFor(
    async () => {
      now += 1_001;
      await all();
      return cache.reads > reads;
    },
    20_000,
    100,
  );
  t.ok(ok, "the live log's watch reported the append: it was read again");
  t.equal(cache.reads, reads + 1, 'and only it');
});
