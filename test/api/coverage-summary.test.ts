// A cold coverage page reads summaries, not the logs of compacted days (issue 34 §4, "its summary
// is known at write time"): a compacted market-day's first and newest record come from its
// partition's manifest (the record index compaction writes), used when the log is gone or is still
// the very log compaction read (same bytes). Shown on real files: the answer equals what reading
// every log and partition says; after the closed day's books logs are overwritten in place with
// zeros (same size: what compaction read, as far as a stat can tell), a cold server answers the
// same (the old code read the logs and found nothing in them); with the logs deleted, a cold page
// decodes no Parquet row group (the old code rebuilt each market's first and last rows).

import t from 'tap';
import { openSync, writeSync, closeSync, statSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { compactDay, logFilePath, parquetStore } from '../../src/storage/testing.js';
import { utcDay } from '../../src/schema/time.js';
import { tmpDataDir } from './helpers.js';
import { coldCoveragePage, readSpans, writeMarkets, type Spans } from './coverage-fixtures.js';

const DAY_MS = 86_400_000;
const closed = ['sum-a', 'sum-b', 'sum-c'];
const live = 'sum-live';

t.test('a cold coverage page takes compacted days from their manifests, never from their logs', async (t) => {
  const dir = tmpDataDir(t);
  const day = utcDay(Date.now() - 2 * DAY_MS);
  const t0 = Date.parse(`${day}T10:00:00.000Z`);
  await writeMarkets(dir, closed, { t0, spreadMs: 1000, n: 30, nStep: 7, bothOutcomes: true, cpEvery: 10 });
  await writeMarkets(dir, [live], { t0: Date.now() - 60_000, spreadMs: 0, n: 25, nStep: 0, bothOutcomes: true });
  const results = await compactDay(dir, day);
  t.ok(results.length > 0, 'the closed day compacted');

  const want: Record<string, Spans> = {};
  for (const id of [...closed, live]) want[id] = await readSpans(dir, id);
  t.ok(
    closed.every((id) => want[id].books !== null),
    'every closed market has books',
  );

  const page = async (): Promise<Record<string, Spans>> => {
    const p = await coldCoveragePage(t, dir);
    t.equal(p.status, 200);
    return p.spans;
  };
  t.same(await page(), want, 'the cold page answers what reading every log and partition says');

  // The closed day's books logs zeroed in place: same size, so still "what compaction read".
  for (const id of closed) {
    const f = logFilePath(dir, { family: 'coin', stream: 'books', market: id }, day);
    const size = statSync(f).size;
    const fd = openSync(f, 'r+');
    writeSync(fd, Buffer.alloc(size), 0, size, 0);
    closeSync(fd);
  }
  t.same(await page(), want, 'a cold page after the compacted logs were zeroed: the same answer (they were not read)');

  // The logs retired: the days are served from Parquet, and their ends from the manifests alone.
  for (const id of closed) rmSync(join(dir, 'logs', 'coin', 'books', id), { recursive: true });
  const store = parquetStore(dir);
  const decodes = store.decodes;
  t.same(await page(), want, 'a cold page with the logs deleted: the same answer');
  t.equal(store.decodes, decodes, 'and no Parquet row group decoded for it');
});
