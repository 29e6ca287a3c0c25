// A merge on two threads (markets taken from one counter by the calling thread and a helper, then
// the merged day compacted with its helper thread) builds the same merged day as a merge on one,
// against a real SeaweedFS: the merged logs byte for byte, and every row of every dataset of the
// merged day's Parquet (read back with the Parquet reader), with both threads having merged
// markets. Two recorders hold overlapping sets of markets, so the day has markets from one
// recorder, from the other, and from both.

import t from 'tap';
import { mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { requireTool } from '../../helpers/toolchains.js';
import { tempDir } from '../../selfhost/helpers.js';
import { compactDay } from '../../../src/storage/compaction/compact-day.js';
import { syncArchive } from '../../../src/storage/archive/sync.js';
import { mergeSplitCounts } from '../../../src/storage/merge/merge.js';
import { ParquetFileReader } from '../../../src/storage/parquet/file.js';
import { writeFixture } from '../../../tools/fixtures/compaction-logs.js';
import { DAY } from './common.js';
import { startWeed, useTestArchive } from '../../../tools/fixtures/weed.js';
import { mergeKeepingDay, recorderCopy } from './merge-helpers.js';

t.setTimeout(600_000);
const bin = requireTool(t, 'seaweedfs');
const BUCKET = 'pmtape-merge-threads';

/** Every file under `dir`, by path relative to it. */
function files(dir: string, under = dir, out: string[] = []): string[] {
  for (const name of readdirSync(under)) {
    const p = join(under, name);
    if (statSync(p).isDirectory()) files(dir, p, out);
    else out.push(relative(dir, p));
  }
  return out.sort();
}

const json = (v: unknown): string =>
  JSON.stringify(v, (_k, x: unknown) =>
    typeof x === 'bigint' ? x.toString() : ArrayBuffer.isView(x) ? Array.from(x as unknown as ArrayLike<number>) : x,
  );

/** The rows of every partition of a compacted tree, sorted (the part files may be cut at other markets). */
async function rowsOf(dir: string): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  for (const f of files(dir).filter((x) => x.endsWith('.parquet'))) {
    const partition = f.slice(0, f.lastIndexOf('/'));
    const r = await ParquetFileReader.open(join(dir, f));
    try {
      const tab = await r.readAll();
      const rows = out.get(partition) ?? out.set(partition, []).get(partition)!;
      for (const row of tab.toArray()) rows.push(json((row as { toJSON(): unknown }).toJSON()));
    } finally {
      r.close();
    }
  }
  for (const rows of out.values()) rows.sort();
  return out;
}

if (bin) {
  t.test('a merge on two threads builds the same merged day as a merge on one', async (t) => {
    const weed = await startWeed(t, bin);
    await weed.createBucket(BUCKET);
    const archive = useTestArchive(`s3://${BUCKET}/shared`, weed.endpoint);
    const dir = tempDir(t, 'pmtape-merge-threads-');
    const whole = join(dir, 'whole');
    mkdirSync(whole);
    await writeFixture(whole, { days: [DAY], booksPerDay: 200, coinMarkets: 4, bothOutcomes: true, spanMs: 600_000 });
    // a lacks coin 50003, b lacks coin 50001: the other markets come from both.
    const lacks: Record<string, string> = { a: '50003', b: '50001' };
    for (const id of ['a', 'b']) {
      const d = join(dir, id);
      recorderCopy(whole, d, (family, m) => !(family === 'coin' && m.startsWith(lacks[id])));
      await compactDay(d, DAY, { threads: 1 });
      t.equal((await syncArchive(d, { ...archive, recorderId: id })).failed, 0, `${id} published`);
    }
    // Each merge's scratch tree kept as it stands once compacted (the merge removes it after publishing).
    const merged = async (threads: number): Promise<string> => {
      const { kept, result: r } = await mergeKeepingDay(archive, DAY, dir, threads);
      t.equal(r.published?.failed, 0, `the merge on ${threads} thread(s) published`);
      t.ok(r.markets >= 4, `${r.markets} markets' books merged`);
      return kept;
    };
    const c0 = { ...mergeSplitCounts };
    const one = await merged(1);
    t.equal(mergeSplitCounts.helper, c0.helper, 'one thread: no helper');
    const c1 = { ...mergeSplitCounts };
    const two = await merged(2);
    t.ok(mergeSplitCounts.helper > c1.helper, `two threads: the helper merged ${mergeSplitCounts.helper - c1.helper} market(s)`);
    t.ok(mergeSplitCounts.caller > c1.caller, `and the calling thread ${mergeSplitCounts.caller - c1.caller}`);

    const logs = (d: string): string[] => files(join(d, 'logs')).filter((f) => f.endsWith('.log'));
    t.ok(logs(one).length >= 8, `${logs(one).length} merged logs`);
    t.same(logs(two), logs(one), 'the same merged logs');
    for (const f of logs(one)) t.ok(readFileSync(join(two, 'logs', f)).equals(readFileSync(join(one, 'logs', f))), `${f}: the same bytes`);
    const [r1, r2] = [await rowsOf(join(one, 'parquet')), await rowsOf(join(two, 'parquet'))];
    t.same([...r2.keys()], [...r1.keys()], 'the same partitions');
    t.ok(
      [...r1.keys()].some((k) => k.includes('book_changes')) && [...r1.keys()].some((k) => k.includes('book_snapshots')),
      'record and derived datasets',
    );
    t.ok(r1.get(`family=coin/dataset=book_changes/date=${DAY}`)!.length > 1000, 'the coin books have rows');
    for (const [k, rows] of r1) t.ok(json(r2.get(k)) === json(rows), `${k}: the same ${rows.length} rows`);
  });
}
