// A merge whose source goes on after a gap every recorder shared rebuilds that source's books from
// the records it already took (market.ts, rebuildFromTaken) instead of reading them again from the
// checkpoint before: the merged day must be the same as when every such seek reads again. Against a
// real SeaweedFS, the same recorders' day merged both ways: the merged logs byte for byte and every
// row of every dataset of the merged day's Parquet, with the rebuilding path taken (counted) in one
// merge and never in the other. Two recorders, one lacking a market, so the day has markets from
// one recorder and from both; the fixture's gaps (closed, and open ones ended by the next book)
// are shared by both copies.

import t from 'tap';
import { cpSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { requireTool } from '../../helpers/toolchains.js';
import { tempDir } from '../../selfhost/helpers.js';
import { compactDay } from '../../../src/storage/compaction/compact-day.js';
import { syncArchive } from '../../../src/storage/archive/sync.js';
import { mergeDay } from '../../../src/storage/merge/merge.js';
import { mergeSeekCounts, setReuseTaken } from '../../../src/storage/merge/market.js';
import { decodeMarket } from '../../../src/storage/paths.js';
import { writeFixture } from '../../../tools/fixtures/compaction-logs.js';
import { DAY } from './common.js';
import { files, json, rowsOf } from './merge-helpers.js';
import { startWeed, useTestArchive } from '../../../tools/fixtures/weed.js';

t.setTimeout(600_000);
const bin = requireTool(t, 'seaweedfs');
const BUCKET = 'pmtape-merge-seek';

if (bin) {
  t.test('rebuilding a source from the records it took merges the same day as reading them again', async (t) => {
    const weed = await startWeed(t, bin);
    await weed.createBucket(BUCKET);
    const archive = useTestArchive(`s3://${BUCKET}/shared`, weed.endpoint);
    const dir = tempDir(t, 'pmtape-merge-seek-');
    const whole = join(dir, 'whole');
    mkdirSync(whole);
    await writeFixture(whole, { days: [DAY], booksPerDay: 800, coinMarkets: 3, bothOutcomes: true, spanMs: 900_000 });
    for (const id of ['a', 'b']) {
      const d = join(dir, id);
      cpSync(whole, d, { recursive: true });
      // b lacks coin 50001: that market comes from a alone.
      if (id === 'b')
        for (const stream of readdirSync(join(d, 'logs', 'coin')))
          for (const m of readdirSync(join(d, 'logs', 'coin', stream)))
            if (decodeMarket(m)!.startsWith('50001')) rmSync(join(d, 'logs', 'coin', stream, m), { recursive: true, force: true });
      await compactDay(d, DAY, { threads: 1 });
      t.equal((await syncArchive(d, { ...archive, recorderId: id })).failed, 0, `${id} published`);
    }
    // Each merge's scratch tree kept as it stands once compacted (the merge removes it after publishing).
    // One thread: the switch is this thread's own (a helper thread would have its own module state).
    const merged = async (reuse: boolean): Promise<{ dir: string; reused: number; jumped: number }> => {
      const work = join(dir, `work-${reuse}`);
      const kept = join(dir, `merged-${reuse}`);
      mkdirSync(work);
      const c0 = { ...mergeSeekCounts };
      setReuseTaken(reuse);
      try {
        const r = await mergeDay(archive, DAY, {
          threads: 1,
          replace: true,
          workDir: work,
          onPhase: (p) => {
            if (p === 'compacted') cpSync(join(work, readdirSync(work)[0], 'out'), kept, { recursive: true });
          },
        });
        t.equal(r.published?.failed, 0, `the merge (reuse ${reuse}) published`);
        t.ok(r.gap_ms > 0, `the merged day has the recorders' shared gaps (${r.gap_ms} ms)`);
      } finally {
        setReuseTaken(true);
      }
      return { dir: kept, reused: mergeSeekCounts.reused - c0.reused, jumped: mergeSeekCounts.jumped - c0.jumped };
    };
    const again = await merged(false);
    const reused = await merged(true);
    t.equal(again.reused, 0, 'reading again: no seek rebuilt from taken records');
    t.ok(again.jumped > 0, `reading again: ${again.jumped} seeks read from a checkpoint again`);
    t.ok(reused.reused > 0, `rebuilding: ${reused.reused} seeks rebuilt from taken records`);
    t.ok(reused.jumped < again.jumped, `rebuilding: ${reused.jumped} seeks still read again (of ${again.jumped})`);

    const logs = (d: string): string[] => files(join(d, 'logs')).filter((f) => f.endsWith('.log'));
    t.ok(logs(again.dir).length >= 6, `${logs(again.dir).length} merged logs`);
    t.same(logs(reused.dir), logs(again.dir), 'the same merged logs');
    for (const f of logs(again.dir))
      t.ok(readFileSync(join(reused.dir, 'logs', f)).equals(readFileSync(join(again.dir, 'logs', f))), `${f}: the same bytes`);
    const [r1, r2] = [await rowsOf(join(again.dir, 'parquet')), await rowsOf(join(reused.dir, 'parquet'))];
    t.same([...r2.keys()], [...r1.keys()], 'the same partitions');
    t.ok(r1.get(`family=coin/dataset=book_changes/date=${DAY}`)!.length > 1000, 'the coin books have rows');
    for (const [k, rows] of r1) t.ok(json(r2.get(k)) === json(rows), `${k}: the same ${rows.length} rows`);
  });
}
