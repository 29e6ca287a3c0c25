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
import { compactDay, logFilePath, openReader, parquetStore } from '../../src/storage/testing.js';
import { datasetSpan } from '../../src/api/query/coverage.js';
import type { CoinMarket } from '../../src/schema/market.js';
import type { StreamName } from '../../src/schema/observation.js';
import { utcDay } from '../../src/schema/time.js';
import { bookRecords, catalog, coinMarket, keysFor, testApp, testConfig, tmpDataDir, writeLog } from './helpers.js';

const DAY_MS = 86_400_000;
const closed = ['sum-a', 'sum-b', 'sum-c'];
const live = 'sum-live';
const mk = (id: string): CoinMarket => ({ ...coinMarket, market_id: id, condition_id: `0x${id}`, slug: id });

/** What reading says (first()/latest() over every day, logs and partitions): the answer to keep. */
async function readSpans(dir: string, id: string): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const s of ['books', 'metrics', 'catalog'] as StreamName[]) {
    const r = openReader(dir, { family: 'coin', stream: s, market: id });
    out[s] = await datasetSpan({ ...r, span: undefined, first: () => r.first(), latest: () => r.latest() });
  }
  return out;
}

t.test('a cold coverage page takes compacted days from their manifests, never from their logs', async (t) => {
  const dir = tmpDataDir(t);
  const day = utcDay(Date.now() - 2 * DAY_MS);
  const t0 = Date.parse(`${day}T10:00:00.000Z`);
  for (const [i, id] of closed.entries()) {
    await writeLog(dir, 'coin', 'catalog', id, [catalog(mk(id), t0 + i)]);
    await writeLog(
      dir,
      'coin',
      'books',
      id,
      bookRecords([`${id}-up`, `${id}-down`], { start: t0 + 1000 * i, n: 30 + 7 * i, stepMs: 100, cpEvery: 10 }),
    );
  }
  const now = Date.now() - 60_000;
  await writeLog(dir, 'coin', 'catalog', live, [catalog(mk(live), now)]);
  await writeLog(dir, 'coin', 'books', live, bookRecords([`${live}-up`, `${live}-down`], { start: now + 10, n: 25, stepMs: 100 }));
  const results = await compactDay(dir, day);
  t.ok(results.length > 0, 'the closed day compacted');

  const want: Record<string, Record<string, unknown>> = {};
  for (const id of [...closed, live]) want[id] = await readSpans(dir, id);
  t.ok(
    closed.every((id) => want[id].books !== null),
    'every closed market has books',
  );

  const keys = await keysFor(dir);
  const page = async (): Promise<Record<string, unknown>> => {
    // A fresh server each time: its coverage cache is cold.
    const app = await testApp(t, testConfig(dir));
    const res = await app.inject({ url: '/v3/coverage?family=coin&limit=1000', headers: { authorization: `Bearer ${keys.paid}` } });
    t.equal(res.statusCode, 200);
    await app.close();
    const data = res.json<{ data: { market_id: string; datasets: Record<string, unknown> }[] }>().data;
    return Object.fromEntries(data.map((d) => [d.market_id, d.datasets]));
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
