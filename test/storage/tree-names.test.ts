// The dataset tree as engines see it: part files sort in market order by name (the first part was
// `<dataset>-<date>.parquet`, which sorts after `-0001`), and a dataset without rows on a day (yes/no
// trades) still has one valid empty file, so the documented DuckDB glob answers 0 rows instead of
// "No files found".

import t from 'tap';
import { readdirSync } from 'node:fs';
import { DuckDBInstance } from '@duckdb/node-api';
import { compactDay } from '../../src/storage/compaction/compact-day.js';
import { partitionDir, readManifest, writeManifest } from '../../src/storage/parquet/manifest.js';
import { deleteExpiredLogs } from '../../src/storage/compaction/retention.js';
import { rm } from 'node:fs/promises';
import type { Observation } from '../../src/schema/observation.js';
import { catalog, coinMarket, T0, tmpDataDir, writeLog, yesnoMarket } from '../api/helpers.js';

const DAY = '2026-07-26';
const book = (tok: string, ts: number): Observation => ({
  type: 'book',
  token_id: tok,
  units: 'decimal',
  bids: [['0.40', '10']],
  asks: [['0.60', '5']],
  recv_ts: ts,
  source_ts: null,
});

t.test('part files sort in market order; an empty dataset has one empty file', async (t) => {
  const dir = tmpDataDir(t);
  const ids = ['100', '200', '300'];
  for (const [i, id] of ids.entries()) {
    const m = {
      ...coinMarket,
      market_id: id,
      outcomes: [
        { label: 'Up', token_id: `${id}1` },
        { label: 'Down', token_id: `${id}2` },
      ],
    };
    await writeLog(dir, 'coin', 'catalog', id, [catalog(m, T0 - 60_000)]);
    await writeLog(dir, 'coin', 'books', id, [book(`${id}1`, T0 + i), book(`${id}2`, T0 + i), book(`${id}1`, T0 + 5000 + i)]);
  }
  await writeLog(dir, 'yesno-exchange', 'catalog', yesnoMarket.market_id, [catalog(yesnoMarket, T0 - 60_000)]);
  await writeLog(dir, 'yesno-exchange', 'books', yesnoMarket.market_id, [
    { type: 'yesno_book', units: 'dollars', yes: [['0.5300', '10.00']], no: [['0.4500', '5.00']], recv_ts: T0, source_ts: null },
  ]);
  await compactDay(dir, DAY, { fileRows: 1 });

  const db = await DuckDBInstance.create(':memory:');
  const conn = await db.connect();
  t.teardown(() => {
    conn.closeSync();
    db.closeSync();
  });
  for (const dataset of ['book_changes', 'book_snapshots']) {
    const pdir = partitionDir(dir, 'coin', dataset as 'book_changes', DAY);
    const files = readdirSync(pdir)
      .filter((f) => f.endsWith('.parquet'))
      .sort();
    t.equal(files.length, 3, `${dataset}: one part per market (fileRows 1)`);
    t.same(
      files,
      files.map((_, i) => `${dataset}-${DAY}-${String(i).padStart(4, '0')}.parquet`),
      `${dataset}: every part numbered`,
    );
    const firsts: string[] = [];
    for (const f of files) {
      const r = (await conn.runAndReadAll(`SELECT min(market_id) AS m FROM read_parquet('${pdir}/${f}')`)).getRowObjectsJS() as {
        m: string;
      }[];
      firsts.push(r[0].m);
    }
    t.same(firsts, ids, `${dataset}: in name order the files hold the markets in order`);
    const all = (
      await conn.runAndReadAll(
        `SELECT market_id FROM read_parquet('${dir}/parquet/family=coin/dataset=${dataset}/**/*.parquet', hive_partitioning = true)`,
      )
    ).getRowObjectsJS() as { market_id: string }[];
    const seen = all.map((r) => r.market_id);
    t.same(seen, [...seen].sort(), `${dataset}: the documented glob returns rows in market order`);
  }

  const trades = partitionDir(dir, 'yesno-exchange', 'trades', DAY);
  t.same(readdirSync(trades).sort(), ['_manifest.json', `trades-${DAY}-0000.parquet`], 'a day without trades has one (empty) file');
  const n = (
    await conn.runAndReadAll(
      `SELECT count(*) AS n FROM read_parquet('${dir}/parquet/family=yesno-exchange/dataset=trades/**/*.parquet', hive_partitioning = true)`,
    )
  ).getRowObjectsJS() as { n: bigint }[];
  t.equal(Number(n[0].n), 0, 'the documented glob reads it: 0 rows, no error');
  const cols = (
    await conn.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet('${trades}/trades-${DAY}-0000.parquet')`)
  ).getRowObjectsJS() as { column_name: string }[];
  t.ok(cols.some((c) => c.column_name === 'price') && cols.some((c) => c.column_name === 'market_id'), "with the dataset's schema");

  // A tree written by older code: the empty partition has only its manifest, and the logs are gone.
  const m = (await readManifest(trades))!;
  await rm(`${trades}/trades-${DAY}-0000.parquet`);
  await writeManifest(trades, { ...m, files: [] });
  await deleteExpiredLogs(dir, Date.now(), 0);
  await compactDay(dir, DAY);
  t.same(
    readdirSync(trades).sort(),
    ['_manifest.json', `trades-${DAY}-0000.parquet`],
    'the next compact gives it its empty file, logs or not',
  );
  const again = (
    await conn.runAndReadAll(`SELECT count(*) AS n FROM read_parquet('${dir}/parquet/family=yesno-exchange/dataset=trades/**/*.parquet')`)
  ).getRowObjectsJS() as { n: bigint }[];
  t.equal(Number(again[0].n), 0);
});
