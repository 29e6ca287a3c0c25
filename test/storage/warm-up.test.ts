// `serve` warms the Parquet read path before it says ready (src/storage/compaction/warm-up.ts): the
// modules are loaded and one record chunk of the newest compacted books day is really decoded, yet
// nothing of that read is kept: the process-wide store decoded nothing, no file stays open and no
// block stays cached, so the first request still reads its own data cold.

import t, { type Test } from 'tap';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DAY_MS, dayStartMs, utcDay } from '../../src/schema/time.js';
import { compactDay } from '../../src/storage/compaction/compact-day.js';
import { cachedBlocks, openFiles } from '../../src/storage/parquet/file-ranges.js';
import { partitionDir, readManifest } from '../../src/storage/parquet/manifest.js';
import { parquetStore } from '../../src/storage/parquet/reader.js';
import { warmParquet } from '../../src/storage/compaction/warm-up.js';
import { writeFixture } from '../../tools/fixtures/compaction-logs.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function tmp(t: Test): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'pmtape-warm-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

t.test('a data dir without Parquet loads nothing', async (t) => {
  t.same(await warmParquet(await tmp(t)), { loaded: false, decoded: null });
});

t.test('one chunk of the newest compacted books day is decoded, and nothing of it is kept', async (t) => {
  const dir = await tmp(t);
  const days = [utcDay(Date.now() - 3 * DAY_MS), utcDay(Date.now() - 2 * DAY_MS)];
  await writeFixture(dir, { days, booksPerDay: 300, coinMarkets: 2, spanMs: 600_000 });
  for (const d of days) await compactDay(dir, d);
  const files = openFiles();
  const blocks = cachedBlocks();

  const got = await warmParquet(dir);
  t.equal(got.loaded, true);
  t.equal(got.decoded?.date, days[1], 'the newest day');
  const dayStart = dayStartMs(days[1])!;
  t.ok(
    got.decoded && got.decoded.from >= dayStart && got.decoded.from < dayStart + DAY_MS,
    `from the chunk's first receive time, that day (${got.decoded?.from})`,
  );
  const manifest = await readManifest(partitionDir(dir, got.decoded!.family, 'book_changes', days[1]));
  t.ok(got.decoded && Object.keys(manifest?.records ?? {}).includes(got.decoded.market), `a market of that day (${got.decoded?.market})`);

  const store = parquetStore(dir);
  t.equal(store.decodes, 0, 'the process-wide store decoded nothing');
  t.equal(store.cachedBytes, 0, 'and holds nothing');
  // The private store's files close on their promises: wait for that, 10 s at most.
  for (let i = 0; i < 2000 && (openFiles() !== files || cachedBlocks() !== blocks); i++) await sleep(5);
  t.equal(openFiles(), files, 'no file left open');
  t.equal(cachedBlocks(), blocks, 'no block left cached');
});

t.test('a Parquet tree with no books partition loads the modules and decodes nothing', async (t) => {
  const dir = await tmp(t);
  const day = utcDay(Date.now() - 2 * DAY_MS);
  await writeFixture(dir, { days: [day], booksPerDay: 50, coinMarkets: 1, spanMs: 60_000 });
  await compactDay(dir, day);
  const families = await readdir(join(dir, 'parquet'));
  t.ok(families.length > 0, `compacted families: ${families.join(', ')}`);
  for (const f of families) await rm(join(dir, 'parquet', f, 'dataset=book_changes'), { recursive: true, force: true });
  t.same(await warmParquet(dir), { loaded: true, decoded: null });
});
