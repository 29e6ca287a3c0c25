// Compaction of real logs (written by the real writer) into Hive-partitioned Parquet, checked with
// DuckDB reading the tree as a researcher would, and against the logs record for record.

import t from 'tap';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { compactDay, readLogDay } from '../../src/storage/compaction/compact-day.js';
import { listMarkets } from '../../src/storage/paths.js';
import { partitionDir, readManifest } from '../../src/storage/parquet/manifest.js';
import { DAY_MS, utcDay } from '../../src/schema/time.js';
import type { Family } from '../../src/schema/observation.js';
import { writeFixture } from '../../tools/fixtures/compaction-logs.js';

const day2 = utcDay(Date.now() - 2 * DAY_MS);
const day3 = utcDay(Date.now() - 3 * DAY_MS);

async function logRecords(dataDir: string, family: Family, stream: 'books' | 'metrics' | 'catalog', day: string) {
  const out: { market: string; rec: Record<string, unknown>; checkpoint: boolean }[] = [];
  for (const market of await listMarkets(dataDir, family, stream)) {
    for await (const r of readLogDay(dataDir, { family, stream, market }, day))
      out.push({ market, rec: r.rec as never, checkpoint: r.checkpoint });
  }
  return out;
}

t.test('compaction of a closed day', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'pmtape-compact-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFixture(dir, { days: [day3, day2], booksPerDay: 300 });
  const results = await compactDay(dir, day2);
  const db = await DuckDBInstance.create(':memory:');
  const conn = await db.connect();
  t.teardown(() => {
    conn.closeSync();
    db.closeSync();
  });
  const q = async (sql: string) => (await conn.runAndReadAll(sql)).getRowObjectsJS();
  const glob = (family: string, dataset: string) =>
    `read_parquet('${dir}/parquet/family=${family}/dataset=${dataset}/**/*.parquet', hive_partitioning=true)`;

  t.test('writes one partition per family and dataset that has records', async (t) => {
    const written = results
      .filter((r) => r.status === 'written')
      .map((r) => `${r.family}/${r.dataset}`)
      .sort();
    t.same(written, [
      'coin/book_changes',
      'coin/candles',
      'coin/gaps',
      'coin/metrics',
      'coin/trades', // candles: per outcome, each book on its own
      'wallet-prediction/book_changes',
      'wallet-prediction/book_snapshots',
      'wallet-prediction/candles',
      'wallet-prediction/gaps',
      'wallet-prediction/metrics',
      'wallet-prediction/trades',
      'yesno-exchange/book_changes',
      'yesno-exchange/book_snapshots',
      'yesno-exchange/candles',
    ]);
    t.ok(results.every((r) => r.date === day2));
  });

  t.test('DuckDB reads every level change back exactly, sorted by market then receive time then seq', async (t) => {
    for (const family of ['coin', 'wallet-prediction', 'yesno-exchange'] as const) {
      // The rows each record should become, built here independently of the compactor.
      const want: {
        market: string;
        seq: number;
        r_us: number;
        type: string;
        snap: boolean;
        side: string | null;
        price: string | null;
        size: string | null;
        cp: boolean;
      }[] = [];
      const recs = (await logRecords(dir, family, 'books', day2)).sort((a, b) =>
        a.market < b.market ? -1 : a.market > b.market ? 1 : (a.rec.seq as number) - (b.rec.seq as number),
      );
      for (const { market, rec, checkpoint } of recs) {
        const row = (snap: boolean, side: string | null, l?: readonly string[]) =>
          want.push({
            market,
            seq: rec.seq as number,
            r_us: Math.round((rec.recv_ts as number) * 1000),
            type: rec.type as string,
            snap,
            side,
            price: l?.[0] ?? null,
            size: l?.[1] ?? null,
            cp: checkpoint,
          });
        const ladder = (side: string, l: string[][]) => (l.length ? l.forEach((x) => row(true, side, x)) : row(true, side));
        if (rec.type === 'book') {
          ladder('bid', rec.bids as string[][]);
          ladder('ask', rec.asks as string[][]);
        }
        if (rec.type === 'book_checkpoint')
          for (const b of rec.books as { bids: string[][]; asks: string[][] }[]) {
            ladder('bid', b.bids);
            ladder('ask', b.asks);
          }
        if (rec.type === 'book_delta')
          for (const c of rec.changes as { side: string; price: string; size: string }[]) row(false, c.side, [c.price, c.size]);
        if (rec.type === 'yesno_book') {
          ladder('yes', rec.yes as string[][]);
          ladder('no', rec.no as string[][]);
        }
      }
      const rows =
        await q(`SELECT market_id, epoch_us(receive_time) AS r_us, seq, record_type, is_snapshot, side, price::VARCHAR AS price, size::VARCHAR AS size, checkpoint, family, dataset, date::VARCHAR AS date
        FROM ${glob(family, 'book_changes')}`);
      t.equal(rows.length, want.length, `${family}: one row per level (and per empty side of a full book)`);
      let bad = 0;
      rows.forEach((row, i) => {
        const w = want[i];
        const same =
          row.market_id === w.market &&
          Number(row.seq) === w.seq &&
          Number(row.r_us) === w.r_us &&
          row.record_type === w.type &&
          row.is_snapshot === w.snap &&
          row.side === w.side &&
          row.checkpoint === w.cp &&
          (row.price === null ? w.price === null : Number(row.price) === Number(w.price)) &&
          (row.size === null ? w.size === null : Number(row.size) === Number(w.size)) &&
          row.family === family &&
          row.dataset === 'book_changes' &&
          row.date === day2;
        if (!same && bad++ < 3) t.fail(`row ${i} of ${family} differs`, { row, want: w });
      });
      t.equal(bad, 0, `${family} rows compared`);
    }
  });

  t.test(
    'column types follow the contract: TIMESTAMP WITH TIME ZONE (micros), BIGINT seq, DECIMAL prices, nullable source time',
    async (t) => {
      const cols = await q(`DESCRIBE SELECT * FROM ${glob('coin', 'book_changes')}`);
      const type = (n: string) => cols.find((c) => c.column_name === n)?.column_type;
      t.equal(type('receive_time'), 'TIMESTAMP WITH TIME ZONE');
      t.equal(type('source_time'), 'TIMESTAMP WITH TIME ZONE');
      t.equal(type('seq'), 'BIGINT');
      t.equal(type('market_id'), 'VARCHAR');
      t.equal(type('price'), 'DECIMAL(18,8)');
      t.equal(type('size'), 'DECIMAL(18,8)');
      t.equal(type('is_snapshot'), 'BOOLEAN');
      const yn = await q(`DESCRIBE SELECT * FROM ${glob('yesno-exchange', 'book_changes')}`);
      t.equal(yn.find((c) => c.column_name === 'price')?.column_type, 'DECIMAL(18,4)');
      t.equal(yn.find((c) => c.column_name === 'size')?.column_type, 'DECIMAL(18,2)');
      const nulls = await q(`SELECT count(*) AS n FROM ${glob('coin', 'book_changes')} WHERE source_time IS NULL`);
      t.ok(Number(nulls[0].n) > 0, 'records without a venue time have a null source_time');
      const meta = await q(
        `SELECT DISTINCT compression FROM parquet_metadata('${dir}/parquet/family=coin/dataset=book_changes/**/*.parquet')`,
      );
      t.same(
        meta.map((m) => m.compression),
        ['ZSTD'],
      );
      const stats = await q(
        `SELECT stats_min_value, stats_max_value, encodings FROM parquet_metadata('${dir}/parquet/family=coin/dataset=book_changes/**/*.parquet') WHERE path_in_schema = 'seq'`,
      );
      t.ok(stats.length > 0 && stats.every((s) => s.stats_min_value !== null && s.stats_max_value !== null), 'row groups carry statistics');
      t.ok(
        stats.every((s) => (s.encodings as string).includes('DELTA_BINARY_PACKED')),
        'seq is delta-encoded',
      );
      const strs = await q(
        `SELECT encodings FROM parquet_metadata('${dir}/parquet/family=coin/dataset=book_changes/**/*.parquet') WHERE path_in_schema = 'side'`,
      );
      t.ok(
        strs.every((s) => (s.encodings as string).includes('DICTIONARY')),
        'strings are dictionary-encoded',
      );
    },
  );

  t.test('yes/no prices read back as the native text through price_decimals', async (t) => {
    const yn = await q(
      `SELECT price::VARCHAR AS p, price_decimals AS d, size::VARCHAR AS s, size_decimals AS sd, units FROM ${glob('yesno-exchange', 'book_changes')} WHERE price IS NOT NULL LIMIT 5`,
    );
    for (const r of yn) {
      t.match(r.p, /^0\.\d{4}$/, 'DECIMAL(18,4) prices');
      t.equal(r.d, 4, 'the venue wrote four decimals');
      t.equal(r.sd, 2);
      t.equal(r.units, 'dollars');
    }
  });

  t.test('metrics, catalog and gaps are datasets of their own', async (t) => {
    const metrics = await logRecords(dir, 'coin', 'metrics', day2);
    const m = await q(`SELECT metric, outcome, value FROM ${glob('coin', 'metrics')}`);
    t.equal(m.length, metrics.length);
    t.equal(m[0].metric, 'chance');
    const gapsWant = (await logRecords(dir, 'coin', 'books', day2)).filter((r) => r.rec.type === 'gap');
    const g = await q(`SELECT reason, epoch_ms(start_time) AS s, epoch_ms(end_time) AS e FROM ${glob('coin', 'gaps')}`);
    t.equal(g.length, gapsWant.length);
    t.ok(g.some((x) => x.e === null) && g.some((x) => x.e !== null), 'open and closed gaps');
    await compactDay(dir, day3);
    const c = await q(`SELECT market_id, event, changed, status, date::VARCHAR AS date FROM ${glob('coin', 'catalog')}`);
    t.same(
      c,
      [
        { market_id: '50000', event: 'listed', changed: ['status'], status: 'open', date: day3 },
        { market_id: '50001', event: 'listed', changed: ['status'], status: 'open', date: day3 },
      ],
      'catalogue events land in the partition of their day',
    );
  });

  t.test('the manifest lists rows, time range, sha256 and schema version of the file', async (t) => {
    const pdir = partitionDir(dir, 'coin', 'book_changes', day2);
    const m = await readManifest(pdir);
    t.ok(m);
    const f = m!.files[0];
    const bytes = await readFile(join(pdir, f.file));
    t.equal(f.bytes, bytes.length);
    t.equal(f.sha256, createHash('sha256').update(bytes).digest('hex'));
    const agg = await q(
      `SELECT count(*) AS n, epoch_ms(min(receive_time)) AS lo, epoch_ms(max(receive_time)) AS hi FROM ${glob('coin', 'book_changes')} WHERE date::VARCHAR = '${day2}'`,
    );
    t.equal(Number(agg[0].n), f.rows);
    t.equal(Math.floor(f.min_time!), Number(agg[0].lo));
    t.equal(Math.floor(f.max_time!), Number(agg[0].hi));
    t.equal(f.schema_version, 2);
    t.equal(m!.schema_version, 2);
    t.same((await readdir(pdir)).sort(), ['_manifest.json', `book_changes-${day2}-0000.parquet`]);
  });

  t.test('a rerun changes nothing; a stray staging file is ignored by engines and cleaned', async (t) => {
    const pdir = partitionDir(dir, 'coin', 'book_changes', day2);
    const before = await readFile(join(pdir, '_manifest.json'), 'utf8');
    await writeFile(join(pdir, `_staging-book_changes-${day2}.parquet.partial`), 'half a file');
    const n = await q(`SELECT count(*) AS n FROM ${glob('coin', 'book_changes')}`);
    t.ok(Number(n[0].n) > 0, 'DuckDB skips the _staging file');
    const again = await compactDay(dir, day2);
    t.ok(
      again.every((r) => r.status === 'unchanged'),
      'every partition unchanged',
    );
    t.equal(await readFile(join(pdir, '_manifest.json'), 'utf8'), before);
    t.notOk(
      (await readdir(pdir)).some((n) => n.startsWith('_staging')),
      'leftover staging file removed',
    );
  });

  t.test('refuses to run beside another compactor of the same data dir', async (t) => {
    const { acquireLock } = await import('../../src/storage/log/lock.js');
    const release = await acquireLock(join(dir, '_parquet-staging', '.lock'));
    await t.rejects(compactDay(dir, day2), /another compaction \(process \d+\) is running/);
    await release();
    t.ok((await compactDay(dir, day2)).length > 0, 'runs once the other one is gone');
  });

  t.test('refuses a day that is not closed', async (t) => {
    await t.rejects(compactDay(dir, utcDay(Date.now())), /not closed/);
  });
});
