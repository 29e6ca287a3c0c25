// Migrating a schema-version-1 Parquet tree to version 2: `compact` rebuilds a v1 partition from its
// logs while they exist, or from the v1 partition's own `record` column once retention deleted them.
// Before, during and after, `verify` accepts the tree and every read answers the same.

import t from 'tap';
import { mkdtemp, readdir, rm, stat, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { listKeys, openReader } from '../../src/storage/testing.js';
import { closedLogDays, compactDay, readLogDay } from '../../src/storage/compaction/compact-day.js';
import { encodeParquet } from '../../src/storage/parquet/file.js';
import type { ColumnSpec } from '../../src/storage/parquet/columns.js';
import { listPartitions, manifestVersion, partitionDir, readManifest, writeManifest } from '../../src/storage/parquet/manifest.js';
import { checkPartitions } from '../../src/storage/parquet/partition-check.js';
import { ROW_GROUP_ROWS, segmentsOf } from '../../src/storage/parquet/publish.js';
import { parquetStore } from '../../src/storage/parquet/reader.js';
import { indexFilePath, listMarkets, logFilePath } from '../../src/storage/paths.js';
import { FAMILIES } from '../../src/schema/observation.js';
import { DAY_MS, dayStartMs, utcDay } from '../../src/schema/time.js';
import type { LogReader, ReadItem } from '../../src/storage/types.js';
import { writeFixture } from '../../tools/fixtures/compaction-logs.js';
import { createHash } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';

const NOW = Date.now();
const [dayOld, dayNew] = [3, 2].map((k) => utcDay(NOW - k * DAY_MS));

/** The columns of schema version 1 that matter here (the record as JSON is what v1 kept losslessly). */
const V1: ColumnSpec[] = [
  { name: 'market_id', kind: 'utf8', nullable: false, doc: '' },
  { name: 'receive_time', kind: 'ts', nullable: false, doc: '' },
  { name: 'source_time', kind: 'ts', nullable: true, doc: '' },
  { name: 'seq', kind: 'int64', nullable: false, doc: '' },
  { name: 'type', kind: 'utf8', nullable: false, doc: '' },
  { name: 'record', kind: 'utf8', nullable: false, doc: '' },
  { name: 'checkpoint', kind: 'bool', nullable: false, doc: '' },
];

/** Writes the v1 partitions (books, metrics, catalog; gaps as an extra v1 folder) of one day. */
async function writeV1Day(dataDir: string, day: string): Promise<void> {
  for (const family of FAMILIES) {
    for (const stream of ['books', 'metrics', 'catalog', 'gaps'] as const) {
      const rows: Record<string, unknown>[] = [];
      const sources: Record<string, { bytes: number; last_seq: number }> = {};
      const logStream = stream === 'gaps' ? 'books' : stream;
      for (const market of await listMarkets(dataDir, family, logStream)) {
        const path = logFilePath(dataDir, { family, stream: logStream, market }, day);
        const size = await stat(path).then(
          (s) => s.size,
          () => null,
        );
        if (size === null) continue;
        let last = 0;
        for await (const { rec, checkpoint } of readLogDay(dataDir, { family, stream: logStream, market }, day)) {
          last = rec.seq;
          if (stream === 'gaps' && rec.type !== 'gap') continue;
          rows.push({
            market_id: market,
            receive_time: rec.recv_ts,
            source_time: rec.source_ts,
            seq: rec.seq,
            type: rec.type,
            record: JSON.stringify(rec),
            checkpoint,
          });
        }
        sources[market] = { bytes: size, last_seq: last };
      }
      if (Object.keys(sources).length === 0) continue;
      const dir = partitionDir(dataDir, family, stream, day);
      await mkdir(dir, { recursive: true });
      const files = [];
      if (rows.length) {
        const metadata = new Map([
          ['pmtape.schema_version', '1'],
          [
            'pmtape.segments',
            JSON.stringify(
              segmentsOf(
                rows.map((r) => r.market_id),
                rows.map((r) => r.receive_time),
                rows.map((r) => r.seq),
              ),
            ),
          ],
        ]);
        const bytes = encodeParquet(V1, V1.map((c) => rows.map((r) => r[c.name] ?? null)) as never, {
          rowGroupRows: ROW_GROUP_ROWS,
          metadata,
        });
        const file = `${stream}-${day}.parquet`;
        await writeFile(join(dir, file), bytes);
        const times = rows.map((r) => r.receive_time as number);
        files.push({
          file,
          rows: rows.length,
          bytes: bytes.length,
          sha256: createHash('sha256').update(bytes).digest('hex'),
          min_time: Math.min(...times),
          max_time: Math.max(...times),
          schema_version: 1,
        });
      }
      await writeManifest(dir, { family, dataset: stream, date: day, files, sources, created: new Date().toISOString() });
    }
  }
}

async function all(it: AsyncIterable<ReadItem>): Promise<ReadItem[]> {
  const out: ReadItem[] = [];
  for await (const x of it) out.push(x);
  return out;
}

async function observe(r: LogReader): Promise<unknown> {
  const v = (x: ReadItem | null) => (x ? { rec: x.rec, day: x.pos.day, seq: x.pos.seq } : null);
  const o: Record<string, unknown> = {
    all: (await all(r.read('start'))).map(v),
    back: (await all(r.readBackward('end', { limit: 50 }))).map(v),
    latest: v(await r.latest()),
  };
  for (const tm of [dayStartMs(dayOld)! + 5 * 3_600_000, dayStartMs(dayNew)! + 13 * 3_600_000]) {
    o[`cp ${tm}`] = v(await r.checkpointAtOrBefore(tm));
    const p = await r.seekTime(tm);
    o[`read ${tm}`] = p ? (await all(r.read(p, { limit: 30 }))).map(v) : null;
  }
  return o;
}

t.test('a v1 tree migrates to v2 from its logs or from itself, losing nothing', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'pmtape-migrate-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFixture(dir, { days: [dayOld, dayNew], booksPerDay: 400, coinMarkets: 2 });
  for (const d of [dayOld, dayNew]) await writeV1Day(dir, d);
  const keys = await listKeys(dir);
  const before = new Map<string, unknown>();
  for (const k of keys) before.set(JSON.stringify(k), await observe(openReader(dir, k)));

  t.same(
    (await checkPartitions(dir, false)).filter((c) => !c.ok),
    [],
    'verify accepts the v1 tree',
  );

  // Retention already deleted the old day's logs: only the v1 partitions hold it now.
  for (const k of keys) {
    await unlink(logFilePath(dir, k, dayOld)).catch(() => undefined);
    await unlink(indexFilePath(dir, k, dayOld)).catch(() => undefined);
  }
  parquetStore(dir).close();
  for (const k of keys)
    t.same(await observe(openReader(dir, k)), before.get(JSON.stringify(k)), `v1 partitions serve ${k.family}/${k.stream}/${k.market}`);
  t.same(await closedLogDays(dir, NOW), [dayOld, dayNew], 'a day with only v1 partitions is still a day to compact');

  const results = [...(await compactDay(dir, dayOld)), ...(await compactDay(dir, dayNew))];
  t.ok(results.filter((r) => r.status === 'written').length >= 12, 'both days rebuilt as v2');
  for (const p of await listPartitions(dir)) {
    t.not(p.dataset, 'books', `no v1 books folder left (${p.family} ${p.date})`);
    t.equal(manifestVersion((await readManifest(p.dir))!), 2, `${p.family}/${p.dataset}/${p.date} is schema version 2`);
  }
  t.same(
    (await checkPartitions(dir, false)).filter((c) => !c.ok),
    [],
    'verify accepts the v2 tree',
  );
  t.same(
    (await readdir(join(dir, '_parquet-staging'))).filter((n) => n !== '.lock'),
    [],
    'no leftovers of the retired v1 folders',
  );
  for (const k of keys)
    t.same(
      await observe(openReader(dir, k)),
      before.get(JSON.stringify(k)),
      `same answers after migration: ${k.family}/${k.stream}/${k.market}`,
    );

  const again = [...(await compactDay(dir, dayOld)), ...(await compactDay(dir, dayNew))];
  t.ok(
    again.every((r) => r.status === 'unchanged'),
    'a rerun changes nothing',
  );
});

t.test('verify names a partition whose footer and manifest disagree on the schema version', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'pmtape-migrate-v-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFixture(dir, { days: [dayOld], booksPerDay: 50, coinMarkets: 1 });
  await writeV1Day(dir, dayOld);
  const pdir = partitionDir(dir, 'coin', 'books', dayOld);
  const m = (await readManifest(pdir))!;
  await writeManifest(pdir, { ...m, files: m.files.map((f) => ({ ...f, schema_version: 2 })) });
  const bad = (await checkPartitions(dir, false)).filter((c) => !c.ok);
  t.equal(bad.length, 1);
  t.match(bad[0].problem, /footer says schema version 1, manifest says 2/);
});
