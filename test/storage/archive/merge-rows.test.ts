// The merged day's rows are pinned: two recorders' copies of a fixture day, each down at its own
// times (and once at overlapping times), are merged on one thread and on two, and every row of every
// dataset of the merged day (all columns, in the order of the partition's part files) is hashed and
// compared with the digests main's code made (merge-rows.digests.ts, written on 2026-11-28 before
// the merge's pipeline changed). A single row changed, added, dropped or moved fails the test, so
// a change of how the merge builds its day (logs or not, records or rows) must keep its rows exactly.
// To pin new digests after an intended change of the rows (a new column, a changed fixture
// generator or downtime copy): make them with the code before the change and check the rows moved
// only as intended, then PMTAPE_TEST_WRITE_DIGESTS=<file> with the new code (say why in the commit).

import t from 'tap';
import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { requireTool } from '../../helpers/toolchains.js';
import { tempDir } from '../../selfhost/helpers.js';
import { dayStartMs } from '../../../src/schema/time.js';
import { compactDay } from '../../../src/storage/compaction/compact-day.js';
import { syncArchive } from '../../../src/storage/archive/sync.js';
import { ParquetFileReader } from '../../../src/storage/parquet/file.js';
import { listPartitions, readManifest } from '../../../src/storage/parquet/manifest.js';
import { writeFixture } from '../../../tools/fixtures/compaction-logs.js';
import { withDowntime } from '../../../tools/fixtures/merge-downtime.js';
import { startWeed, useTestArchive } from '../../../tools/fixtures/weed.js';
import { MERGED_ROWS } from './merge-rows.digests.js';
import { mergeKeepingDay } from './merge-helpers.js';

t.setTimeout(600_000);
const bin = requireTool(t, 'seaweedfs');
const BUCKET = 'pmtape-merge-rows';
/** A fixed day: the rows hold its times. */
const DAY = '2026-06-15';

const json = (v: unknown): string =>
  JSON.stringify(v, (_k, x: unknown) =>
    typeof x === 'bigint' ? x.toString() : ArrayBuffer.isView(x) ? Array.from(x as unknown as ArrayLike<number>) : x,
  );

/** Per partition (family/dataset): its rows, every column, in part-file order, as a count and a hash. */
async function digests(dataDir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const p of (await listPartitions(dataDir)).sort((a, b) => (`${a.family}/${a.dataset}` < `${b.family}/${b.dataset}` ? -1 : 1))) {
    const m = await readManifest(p.dir);
    if (!m) continue;
    const h = createHash('sha256');
    let rows = 0;
    for (const f of m.files) {
      const r = await ParquetFileReader.open(join(p.dir, f.file));
      try {
        const tab = await r.readAll();
        h.update(json(tab.schema.fields.map((x) => x.name)));
        for (const row of tab.toArray()) {
          h.update(json((row as { toJSON(): unknown }).toJSON()));
          h.update('\n');
          rows++;
        }
      } finally {
        r.close();
      }
    }
    out[`${p.family}/${p.dataset}`] = `${rows} ${h.digest('hex')}`;
  }
  return out;
}

if (bin) {
  t.test("the merged day's rows are exactly those main's merge made", async (t) => {
    const weed = await startWeed(t, bin);
    await weed.createBucket(BUCKET);
    const archive = useTestArchive(`s3://${BUCKET}/shared`, weed.endpoint);
    const dir = tempDir(t, 'pmtape-merge-rows-');
    const whole = join(dir, 'whole');
    mkdirSync(whole);
    const span = 3 * 3_600_000;
    await writeFixture(whole, { days: [DAY], booksPerDay: 1500, coinMarkets: 2, levels: 60, bothOutcomes: true, spanMs: span });
    const t0 = dayStartMs(DAY)! + 1000;
    const min = 60_000;
    // A down 40-60 min and 100-120 min, B 75-90 min and 110-130 min: both down 110-120 min.
    const down: Record<string, [number, number][]> = {
      a: [
        [t0 + 40 * min, t0 + 60 * min],
        [t0 + 100 * min, t0 + 120 * min],
      ],
      b: [
        [t0 + 75 * min, t0 + 90 * min],
        [t0 + 110 * min, t0 + 130 * min],
      ],
    };
    for (const id of ['a', 'b']) {
      const d = join(dir, id);
      await withDowntime(whole, d, down[id]);
      await compactDay(d, DAY, { threads: 1 });
      t.equal((await syncArchive(d, { ...archive, recorderId: id })).failed, 0, `${id} published`);
    }
    const got: Record<string, Record<string, string>> = {};
    for (const threads of [1, 2]) {
      const { kept, result: r } = await mergeKeepingDay(archive, DAY, dir, threads);
      t.equal(r.published?.failed, 0, `the merge on ${threads} thread(s) published`);
      got[`threads=${threads}`] = await digests(kept);
    }
    const write = process.env.PMTAPE_TEST_WRITE_DIGESTS;
    if (write) {
      writeFileSync(write, JSON.stringify(got['threads=1'], null, 2) + '\n');
      t.comment(`digests written to ${write}`);
    }
    // One table for both runs: the day merged on two threads has the rows of the day merged on one.
    t.ok(Number(MERGED_ROWS['coin/book_changes']?.split(' ')[0]) > 10_000, 'the coin books have rows');
    for (const [run, now] of Object.entries(got)) {
      t.same(Object.keys(now).sort(), Object.keys(MERGED_ROWS).sort(), `${run}: the same partitions`);
      for (const [k, d] of Object.entries(MERGED_ROWS)) t.equal(now[k], d, `${run} ${k}: the same rows (count, hash) as main's merge`);
    }
  });
}
