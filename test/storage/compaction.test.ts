// Compaction of real logs (written by the real writer) into Hive-partitioned Parquet, checked with
// DuckDB reading the tree as a researcher would, and against the logs record for record.

import t from 'tap';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { compactDay, readLogDay } from '../../src/storage/parquet/compaction.js';
import { listMarkets } from '../../src/storage/paths.js';
import { partitionDir, readManifest } from '../../src/storage/parquet/manifest.js';
import { DAY_MS, utcDay } from '../../src/schema/time.js';
import type { Family } from '../../src/schema/observation.js';
import { writeFixture } from './compaction-fixture.js';

const day2 = utcDay(Date.now() - 2 * DAY_MS);
const day3 = utcDay(Date.now() - 3 * DAY_MS);

async function logRecords(dataDir: string, family: Family, stream: 'books' | 'metrics' | 'catalog', day: string) {
  const out: { market: string; rec: Record<string, unknown>; checkpoint: boolean }[] = [];
  for (const market of await listMarkets(dataDir, family, stream)) {
    for await (const r of readLogDay(dataDir, { family, stream, market }, day)) out.push({ market, rec: r.rec as never, checkpoint: r.checkpoint });
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
  t.teardown(() => { conn.closeSync(); db.closeSync(); });
  const q = async (sql: string) => (await conn.runAndReadAll(sql)).getRowObjectsJS();
  const glob = (family: string, dataset: string) => `read_parquet('${dir}/parquet/family=${family}/dataset=${dataset}/**/*.parquet', hive_partitioning=true)`;

  t.test('writes one partition per family and dataset that has records', async (t) => {
    const written = results.filter((r) => r.status === 'written').map((r) => `${r.family}/${r.dataset}`).sort();
    t.same(written, [
      'coin/books', 'coin/gaps', 'coin/metrics',
      'wallet-prediction/books', 'wallet-prediction/gaps', 'wallet-prediction/metrics',
      'yesno-exchange/books',
    ]);
    t.ok(results.every((r) => r.date === day2));
  });

  t.test('DuckDB reads every book record back exactly, sorted by market then receive time', async (t) => {
    for (const family of ['coin', 'wallet-prediction', 'yesno-exchange'] as const) {
      const want = await logRecords(dir, family, 'books', day2);
      const rows = await q(`SELECT market_id, epoch_us(receive_time) AS r_us, epoch_us(source_time) AS s_us, seq, type, record, checkpoint, family, dataset, date::VARCHAR AS date
        FROM ${glob(family, 'books')}`);
      t.equal(rows.length, want.length, `${family}: one row per logged record`);
      want.sort((a, b) => (a.market < b.market ? -1 : a.market > b.market ? 1 : (a.rec.seq as number) - (b.rec.seq as number)));
      rows.forEach((row, i) => {
        const w = want[i];
        if (row.market_id !== w.market || JSON.stringify(JSON.parse(row.record as string)) !== JSON.stringify(w.rec)) {
          t.fail(`row ${i} of ${family} differs`, { row, want: w });
          return;
        }
        if (Number(row.seq) !== w.rec.seq || Number(row.r_us) !== Math.round((w.rec.recv_ts as number) * 1000)) t.fail(`row ${i} times/seq differ`);
        const src = w.rec.source_ts as number | null;
        if ((row.s_us === null ? null : Number(row.s_us)) !== (src === null ? null : Math.round(src * 1000))) t.fail(`row ${i} source_time differs`);
        if (row.checkpoint !== w.checkpoint || row.type !== w.rec.type) t.fail(`row ${i} type/checkpoint differ`);
        if (row.family !== family || row.dataset !== 'books' || row.date !== day2) t.fail(`row ${i} hive columns wrong`, row);
      });
      t.pass(`${family} rows compared`);
    }
  });

  t.test('column types follow the contract: TIMESTAMP WITH TIME ZONE (micros), BIGINT seq, nullable source time', async (t) => {
    const cols = await q(`DESCRIBE SELECT * FROM ${glob('coin', 'books')}`);
    const type = (n: string) => cols.find((c) => c.column_name === n)?.column_type;
    t.equal(type('receive_time'), 'TIMESTAMP WITH TIME ZONE');
    t.equal(type('source_time'), 'TIMESTAMP WITH TIME ZONE');
    t.equal(type('seq'), 'BIGINT');
    t.equal(type('market_id'), 'VARCHAR');
    t.equal(type('bid_prices'), 'DOUBLE[]');
    const nulls = await q(`SELECT count(*) AS n FROM ${glob('coin', 'books')} WHERE source_time IS NULL`);
    t.ok(Number(nulls[0].n) > 0, 'records without a venue time have a null source_time');
    const meta = await q(`SELECT DISTINCT compression FROM parquet_metadata('${dir}/parquet/family=coin/dataset=books/**/*.parquet')`);
    t.same(meta.map((m) => m.compression), ['ZSTD']);
    const stats = await q(`SELECT stats_min_value, stats_max_value FROM parquet_metadata('${dir}/parquet/family=coin/dataset=books/**/*.parquet') WHERE path_in_schema = 'seq'`);
    t.ok(stats.length > 0 && stats.every((s) => s.stats_min_value !== null && s.stats_max_value !== null), 'row groups carry statistics');
  });

  t.test('book rows carry the whole book after a delta, with flat best bid/ask', async (t) => {
    const rows = await q(`SELECT type, bid_prices, best_bid_price, best_ask_price, ask_prices FROM ${glob('coin', 'books')} WHERE type IN ('book', 'book_delta') AND bid_prices IS NOT NULL`);
    t.ok(rows.length > 200, 'deltas have full books');
    for (const r of rows) {
      const bids = r.bid_prices as number[];
      const asks = r.ask_prices as number[];
      if (bids.length && r.best_bid_price !== bids[0]) t.fail('best bid is the first bid');
      if (asks.length && r.best_ask_price !== asks[0]) t.fail('best ask is the first ask');
      if (bids.some((p, i) => i > 0 && p >= bids[i - 1])) t.fail('bids are best first (descending)');
    }
    const yn = await q(`SELECT yes_prices, units, best_yes_price FROM ${glob('yesno-exchange', 'books')} LIMIT 1`);
    t.match(yn[0].yes_prices, [/^0\.\d{4}$/], 'yes/no prices stay native text');
    t.equal(yn[0].units, 'dollars');
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
    t.same(c, [
      { market_id: '50000', event: 'listed', changed: ['status'], status: 'open', date: day3 },
      { market_id: '50001', event: 'listed', changed: ['status'], status: 'open', date: day3 },
    ], 'catalogue events land in the partition of their day');
  });

  t.test('the manifest lists rows, time range, sha256 and schema version of the file', async (t) => {
    const pdir = partitionDir(dir, 'coin', 'books', day2);
    const m = await readManifest(pdir);
    t.ok(m);
    const f = m!.files[0];
    const bytes = await readFile(join(pdir, f.file));
    t.equal(f.bytes, bytes.length);
    t.equal(f.sha256, createHash('sha256').update(bytes).digest('hex'));
    const agg = await q(`SELECT count(*) AS n, epoch_ms(min(receive_time)) AS lo, epoch_ms(max(receive_time)) AS hi FROM ${glob('coin', 'books')} WHERE date::VARCHAR = '${day2}'`);
    t.equal(Number(agg[0].n), f.rows);
    t.equal(Math.floor(f.min_time!), Number(agg[0].lo));
    t.equal(Math.floor(f.max_time!), Number(agg[0].hi));
    t.equal(f.schema_version, 1);
    t.same((await readdir(pdir)).sort(), ['_manifest.json', `books-${day2}.parquet`]);
  });

  t.test('a rerun changes nothing; a stray staging file is ignored by engines and cleaned', async (t) => {
    const pdir = partitionDir(dir, 'coin', 'books', day2);
    const before = await readFile(join(pdir, '_manifest.json'), 'utf8');
    await writeFile(join(pdir, `_staging-books-${day2}.parquet.partial`), 'half a file');
    const n = await q(`SELECT count(*) AS n FROM ${glob('coin', 'books')}`);
    t.ok(Number(n[0].n) > 0, 'DuckDB skips the _staging file');
    const again = await compactDay(dir, day2);
    t.ok(again.every((r) => r.status === 'unchanged'), 'every partition unchanged');
    t.equal(await readFile(join(pdir, '_manifest.json'), 'utf8'), before);
    t.notOk((await readdir(pdir)).some((n) => n.startsWith('_staging')), 'leftover staging file removed');
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
