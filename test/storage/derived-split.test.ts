// `book_snapshots` built by two threads (derived-split.ts): the same rows as a one-thread build, part
// files in market order, nothing staged left behind, and a helper thread that dies fails the
// partition cleanly instead of publishing half of it.

import t, { type Test } from 'tap';
import { cp, mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { compactDay } from '../../src/storage/compaction/compact-day.js';
import {
  DEFAULT_SPLIT_BLOCK_BYTES,
  DerivedHelper,
  setSplitBlockBytes,
  splitCounts,
  startDerivedSplit,
} from '../../src/storage/compaction/derived-split.js';
import { partitionDir, readManifest, stagingRoot } from '../../src/storage/parquet/manifest.js';
import { checkPartitions } from '../../src/storage/parquet/partition-check.js';
import { partFileName } from '../../src/storage/parquet/publish.js';
import { DAY_MS, utcDay } from '../../src/schema/time.js';
import { writeFixture } from '../../tools/fixtures/compaction-logs.js';

const day = utcDay(Date.now() - 2 * DAY_MS);
const COIN = ['50000', '50001', '50002', '50003', '50004'];

const base = await mkdtemp(join(tmpdir(), 'pmtape-split-'));
t.teardown(() => rm(base, { recursive: true, force: true }));
const template = join(base, 'template');
// An hour of five coin markets (both outcomes), the wallet market and the yes/no market.
await writeFixture(template, { days: [day], booksPerDay: 300, spanMs: 3600_000, coinMarkets: 5, bothOutcomes: true });
// A block per market, and small part files: the helper and the caller each write several.
setSplitBlockBytes(1);
t.teardown(() => setSplitBlockBytes(DEFAULT_SPLIT_BLOCK_BYTES));

const copy = async (name: string): Promise<string> => {
  const dir = join(base, name);
  await cp(template, dir, { recursive: true });
  return dir;
};

const db = await DuckDBInstance.create(':memory:');
const conn = await db.connect();
t.teardown(() => {
  conn.closeSync();
  db.closeSync();
});
/** Every book_snapshots row of a tree, family by family (each has its schema), in one order (the file a row sits in does not matter). */
const snapshots = async (dir: string): Promise<string> => {
  const out: unknown[] = [];
  for (const family of ['coin', 'wallet-prediction', 'yesno-exchange']) {
    const r = await conn.runAndReadAll(
      `SELECT * FROM read_parquet('${dir}/parquet/family=${family}/dataset=book_snapshots/**/*.parquet', hive_partitioning = true) ORDER BY ALL`,
    );
    out.push(r.getRowObjectsJson());
  }
  return JSON.stringify(out);
};

/** The partition's manifest lists each market once, in part files named in order and holding markets in order. */
async function inMarketOrder(t: Test, dir: string, family: 'coin', markets: readonly string[]): Promise<void> {
  const m = (await readManifest(partitionDir(dir, family, 'book_snapshots', day)))!;
  t.same(
    m.files.map((f) => f.file),
    m.files.map((_, i) => partFileName('book_snapshots', day, i)),
    'part files named in order',
  );
  t.same(
    m.files.flatMap((f) => f.markets),
    markets,
    'each market in one file, files in market order',
  );
}

const leftovers = async (dir: string): Promise<string[]> =>
  readdir(stagingRoot(dir)).then(
    (n) => n.filter((x) => x !== '.lock'),
    () => [],
  );

const one = await copy('one');
const oneResults = await compactDay(one, day, { threads: 1, fileRows: 4000 });
const reference = await snapshots(one);

t.test('two threads write the same book_snapshots rows as one, in files in market order', async (t) => {
  const two = await copy('two');
  const before = { ...splitCounts };
  const results = await compactDay(two, day, { threads: 2, fileRows: 4000 });
  const built = splitCounts.helper - before.helper + splitCounts.caller - before.caller;
  t.equal(built, COIN.length + 2, 'every market of the three families built once, by one thread or the other');
  t.same(
    results.map((r) => [r.family, r.dataset, r.status, r.rows]),
    oneResults.map((r) => [r.family, r.dataset, r.status, r.rows]),
    'same partitions, statuses and row counts',
  );
  t.equal(await snapshots(two), reference, 'DuckDB reads the same rows');
  await inMarketOrder(t, two, 'coin', COIN);
  t.same(
    (await checkPartitions(two, false)).filter((c) => !c.ok),
    [],
    'every file matches its manifest',
  );
  t.same(await leftovers(two), [], 'nothing left in staging');
});

t.test('one thread builds no split at all', async (t) => {
  const before = { ...splitCounts };
  const dir = await copy('single');
  await compactDay(dir, day, { threads: 1 });
  t.same(splitCounts, before);
});

t.test('part files the helper wrote alone are adopted and renamed in market order', async (t) => {
  const dir = await copy('helper-only');
  await compactDay(dir, day, { threads: 1, fileRows: 4000 }); // records published; snapshots rebuilt below
  const helper = new DerivedHelper();
  t.teardown(() => helper.close());
  const sources = Object.fromEntries(COIN.map((m) => [m, 1]));
  const before = { ...splitCounts };
  const split = (await startDerivedSplit(dir, 'coin', 'books', day, sources, { fileRows: 4000 }, helper))!;
  // Jobs run in order: once this empty one is done, the helper has claimed every block of the first.
  await helper.run({
    dataDir: dir,
    family: 'coin',
    stream: 'books',
    dataset: 'book_snapshots',
    day,
    blocks: [],
    next: new Int32Array(new SharedArrayBuffer(4)),
  });
  const results = await split.finish();
  t.equal(splitCounts.helper - before.helper, COIN.length, 'the helper built every market');
  t.equal(splitCounts.caller - before.caller, 0, 'the caller found nothing left to claim');
  t.equal(results[0].status, 'written');
  await inMarketOrder(t, dir, 'coin', COIN);
  t.equal(await snapshots(dir), reference, 'the same rows as a one-thread build');
  t.same(await leftovers(dir), []);
});

// Two whole compactions (each also building candles and markets) before the first assertion: more
// than tap's 30 s without output on a loaded machine, so this test has a wider guard.
t.test('a helper thread that dies fails the partition and leaves the published one as it was', { timeout: 300_000 }, async (t) => {
  const dir = await copy('dead-helper');
  await compactDay(dir, day, { threads: 1, fileRows: 4000 });
  const published = await readManifest(partitionDir(dir, 'coin', 'book_snapshots', day));
  const helper = new DerivedHelper();
  const split = (await startDerivedSplit(dir, 'coin', 'books', day, Object.fromEntries(COIN.map((m) => [m, 1])), {}, helper))!;
  await helper.close(); // killed with its job
  await t.rejects(split.finish(), /helper thread stopped/, 'the failure names the helper');
  t.same(await leftovers(dir), [], 'its staging folder is gone');
  t.same(await readManifest(partitionDir(dir, 'coin', 'book_snapshots', day)), published, 'the published partition is untouched');
  t.equal(await snapshots(dir), reference);
  // The next compaction of the same logs has nothing to do.
  const rerun = await compactDay(dir, day);
  t.ok(
    rerun.every((r) => r.status === 'unchanged'),
    'a rerun finds every partition current',
  );
  t.ok(await stat(partitionDir(dir, 'coin', 'book_snapshots', day)));
});
