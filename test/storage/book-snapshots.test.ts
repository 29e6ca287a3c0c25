// `book_snapshots` on real compacted partitions, read back with DuckDB: the grid crosses midnight
// (the first second of a day is served from the book made whole the day before; a day whose log
// goes on past midnight runs to 23:59:59), an open gap leaves its seconds out until a fresh book,
// yes/no rows carry the implied ask in dollars and in cents, and a tree compacted before the dataset
// existed gets it from its Parquet alone on the next `compact`. On deep books (50 levels a side,
// both outcomes, deltas that add, move and remove levels) every level of every row is the book the
// day's records make at the second's end, and the level columns are written without a dictionary.

import t from 'tap';
import { rm } from 'node:fs/promises';
import { DuckDBInstance } from '@duckdb/node-api';
import { compactDay } from '../../src/storage/compaction/compact-day.js';
import { deleteExpiredLogs } from '../../src/storage/compaction/retention.js';
import { partitionDir } from '../../src/storage/parquet/manifest.js';
import type { Observation } from '../../src/schema/observation.js';
import { catalog, coinMarket, tmpDataDir, writeLog, yesnoMarket } from '../api/helpers.js';
import { MarketBooks } from '../../src/book/book-state.js';
import { readLogDay } from '../../src/storage/compaction/input.js';
import { writeFixture } from '../../tools/fixtures/compaction-logs.js';

const MIDNIGHT = Date.parse('2026-07-27T00:00:00.000Z');
const D1 = '2026-07-26';
const D2 = '2026-07-27';

async function rowsOf(dir: string, family: string, where = 'true'): Promise<Record<string, unknown>[]> {
  const db = await DuckDBInstance.create(':memory:');
  const conn = await db.connect();
  try {
    const glob = `${dir}/parquet/family=${family}/dataset=book_snapshots/**/*.parquet`;
    return (
      await conn.runAndReadAll(`SELECT epoch_ms(bucket_start) AS t, epoch_ms(receive_time) AS recv_ms, * EXCLUDE (bucket_start) FROM read_parquet('${glob}', hive_partitioning = true)
      WHERE ${where} ORDER BY bucket_start, token_id`)
    ).getRowObjectsJS();
  } finally {
    conn.closeSync();
    db.closeSync();
  }
}

/** Coin books of both outcomes from 23:59:50 to 00:00:20, a delta every 2 s, an open gap at 00:00:10 healed at 00:00:14. */
function coinAcrossMidnight(): Observation[] {
  const out: Observation[] = [];
  const start = MIDNIGHT - 10_000;
  for (const tok of ['1111', '2222']) {
    out.push({
      type: 'book',
      token_id: tok,
      units: 'decimal',
      bids: [
        ['0.48', '100'],
        ['0.47', '50'],
      ],
      asks: [['0.52', '80']],
      recv_ts: start + (tok === '1111' ? 0 : 1),
      source_ts: start,
    });
  }
  for (let t = start + 2000; t <= MIDNIGHT + 20_000; t += 2000) {
    if (t === MIDNIGHT + 10_000) {
      out.push({ type: 'gap', reason: 'disconnected', start_ts: t, end_ts: null, recv_ts: t, source_ts: null });
      continue;
    }
    if (t === MIDNIGHT + 14_000) {
      out.push({ type: 'gap', reason: 'disconnected', start_ts: MIDNIGHT + 10_000, end_ts: t, recv_ts: t, source_ts: null });
      for (const tok of ['1111', '2222'])
        out.push({
          type: 'book',
          token_id: tok,
          units: 'decimal',
          bids: [['0.50', '10']],
          asks: [['0.51', '10']],
          recv_ts: t,
          source_ts: t,
        });
      continue;
    }
    out.push({
      type: 'book_delta',
      token_id: '1111',
      changes: [{ side: 'bid', price: '0.49', size: String(1 + ((t / 1000) % 50)) }],
      recv_ts: t,
      source_ts: t,
    });
  }
  return out;
}

t.test(
  'coin: the grid crosses midnight, an open gap is left out, the first second of a day is warmed up from the day before',
  async (t) => {
    const dir = tmpDataDir(t);
    await writeLog(dir, 'coin', 'catalog', coinMarket.market_id, [catalog(coinMarket, MIDNIGHT - 60_000)]);
    await writeLog(dir, 'coin', 'books', coinMarket.market_id, coinAcrossMidnight());
    await compactDay(dir, D1);
    const results = await compactDay(dir, D2);
    t.ok(
      results.some((r) => r.dataset === 'book_snapshots' && r.family === 'coin' && r.status === 'written'),
      'the dataset is written',
    );

    const rows = await rowsOf(dir, 'coin');
    const seconds = [...new Set(rows.map((r) => Number(r.t)))];
    // Valid from 23:59:50.001 (the second outcome's book): the first whole second is 23:59:51.
    t.equal(seconds[0], MIDNIGHT - 9000, 'the first row is the first second the books were valid from its start');
    t.ok(seconds.includes(MIDNIGHT - 1000), 'the last second of the first day is written: its log goes on past midnight');
    t.ok(seconds.includes(MIDNIGHT), 'the first second of the next day is written from the book of the day before');
    t.ok(seconds.includes(MIDNIGHT + 9000), 'the second before the gap is written (the gap starts at its end)');
    for (let s = MIDNIGHT + 10_000; s < MIDNIGHT + 14_000; s += 1000)
      t.notOk(seconds.includes(s), `no row for ${new Date(s).toISOString()}: the books were invalid`);
    t.ok(
      seconds.includes(MIDNIGHT + 14_000),
      "rows resume with the second the fresh book starts (a record at a second's start counts for it)",
    );
    t.equal(seconds[seconds.length - 1], MIDNIGHT + 19_000, 'nothing after the last record (the log ends within the day)');
    t.equal(rows.length, seconds.length * 2, 'one row per outcome and second');

    const at = rows.filter((r) => Number(r.t) === MIDNIGHT);
    t.same(
      at.map((r) => [r.token_id, r.outcome]),
      [
        ['1111', 'Up'],
        ['2222', 'Down'],
      ],
    );
    const up = at[0];
    t.same(
      [up.best_bid, up.bid_price_0, up.bid_price_1, up.bid_price_2, up.bid_price_3],
      [0.49, 0.49, 0.48, 0.47, null],
      'the delta at midnight moved the best bid; levels past the depth are null',
    );
    t.same([up.best_ask, up.ask_price_0, up.ask_size_0, up.ask_price_1], [0.52, 0.52, 80, null]);
    t.equal(up.mid, 0.505, 'the exact midpoint, one decimal more');
    t.equal(Number(up.recv_ms), MIDNIGHT, 'names the newest book record at or before the second (the delta at 00:00:00.000)');
  },
);

t.test('yes/no: the implied yes ask is one dollar (or 100 cents) less the best no bid', async (t) => {
  const dir = tmpDataDir(t);
  const T = MIDNIGHT - 20_000;
  await writeLog(dir, 'yesno-exchange', 'books', yesnoMarket.market_id, [
    {
      type: 'yesno_book',
      units: 'dollars',
      yes: [
        ['0.5300', '10.00'],
        ['0.5200', '3.00'],
      ],
      no: [['0.4500', '5.00']],
      recv_ts: T,
      source_ts: null,
    },
    { type: 'yesno_book', units: 'cents', yes: [['53', '10']], no: [['44', '5']], recv_ts: T + 5000, source_ts: null },
    { type: 'yesno_book', units: 'dollars', yes: [], no: [['0.4500', '5.00']], recv_ts: T + 10_000, source_ts: null },
    { type: 'yesno_book', units: 'dollars', yes: [], no: [['0.4500', '5.00']], recv_ts: T + 15_000, source_ts: null },
  ]);
  await compactDay(dir, D1);
  const rows = await rowsOf(dir, 'yesno-exchange');
  const first = rows.find((r) => Number(r.t) === T + 1000)!;
  t.same([first.units, first.best_bid, first.best_ask, first.mid], ['dollars', 0.53, 0.55, 0.54]);
  t.same([first.yes_price_1, first.yes_size_1, first.no_price_0, first.no_size_0, first.yes_price_2], [0.52, 3, 0.45, 5, null]);
  t.equal(first.token_id, null);
  const cents = rows.find((r) => Number(r.t) === T + 6000)!;
  t.same([cents.units, cents.best_bid, cents.best_ask, cents.mid], ['cents', 53, 56, 54.5]);
  const empty = rows.find((r) => Number(r.t) === T + 11_000)!;
  t.same([empty.best_bid, empty.best_ask, empty.mid], [null, 0.55, null], 'an empty side: no best bid, no mid');
  t.equal(Number(rows[rows.length - 1].t), T + 14_000, 'the last row is the last whole second before the last record (the log ends there)');
  t.equal(rows.length, 15, "every second from the first record's on");
});

t.test('a tree compacted before book_snapshots existed gets it from its Parquet on the next compact', async (t) => {
  const dir = tmpDataDir(t);
  await writeLog(dir, 'coin', 'catalog', coinMarket.market_id, [catalog(coinMarket, MIDNIGHT - 60_000)]);
  await writeLog(dir, 'coin', 'books', coinMarket.market_id, coinAcrossMidnight());
  await compactDay(dir, D1);
  await compactDay(dir, D2);
  const before = await rowsOf(dir, 'coin');
  await deleteExpiredLogs(dir, Date.now(), 0);
  for (const d of [D1, D2]) await rm(partitionDir(dir, 'coin', 'book_snapshots', d), { recursive: true });
  const again = [...(await compactDay(dir, D1)), ...(await compactDay(dir, D2))];
  t.same(
    again.filter((r) => r.dataset === 'book_snapshots' && r.family === 'coin').map((r) => r.status),
    ['written', 'written'],
  );
  t.same(await rowsOf(dir, 'coin'), before, 'the same rows, rebuilt without a log');
  const third = await compactDay(dir, D2);
  t.same(
    third.filter((r) => r.dataset === 'book_snapshots' && r.family === 'coin').map((r) => r.status),
    ['unchanged'],
    'a current partition is kept',
  );
});

t.test('deep books: every level of every row is the book the records make at the end of its second', async (t) => {
  const dir = tmpDataDir(t);
  const day = '2026-07-20';
  await writeFixture(dir, { days: [day], booksPerDay: 2500, coinMarkets: 1, levels: 50, spanMs: 15 * 60_000, bothOutcomes: true });
  await compactDay(dir, day);
  const db = await DuckDBInstance.create(':memory:');
  const conn = await db.connect();
  t.teardown(() => {
    conn.closeSync();
    db.closeSync();
  });
  const glob = `${dir}/parquet/family=coin/dataset=book_snapshots/**/*.parquet`;
  const levels = Array.from({ length: 25 }, (_, i) => [`bid_price_${i}`, `bid_size_${i}`, `ask_price_${i}`, `ask_size_${i}`]).flat();
  const rows = (
    await conn.runAndReadAll(`SELECT epoch_ms(bucket_start) AS t, token_id, ${levels.map((c) => `CAST(${c} AS VARCHAR) AS ${c}`).join(', ')}
    FROM read_parquet('${glob}') ORDER BY bucket_start, token_id`)
  ).getRowObjectsJS() as Record<string, unknown>[];
  t.ok(rows.length > 1000, `${rows.length} rows`);

  // The reference: the day's records replayed into books, up to (not including) each second's end.
  const records = [];
  for await (const { rec } of readLogDay(dir, { family: 'coin', stream: 'books', market: '50000' }, day)) records.push(rec);
  const books = new MarketBooks();
  let next = 0;
  let bad = 0;
  let changedRows = 0;
  const prev = new Map<string, string>();
  const dec = (x: string | undefined): string | null => (x === undefined ? null : Number(x).toFixed(8));
  for (const r of rows) {
    const end = Number(r.t) + 1000;
    while (next < records.length && records[next].recv_ts < end) books.apply(records[next++]);
    const v = books.view(r.token_id as string);
    const want: Record<string, string | null> = {};
    for (let i = 0; i < 25; i++) {
      want[`bid_price_${i}`] = dec(v?.bids[i]?.[0]);
      want[`bid_size_${i}`] = dec(v?.bids[i]?.[1]);
      want[`ask_price_${i}`] = dec(v?.asks[i]?.[0]);
      want[`ask_size_${i}`] = dec(v?.asks[i]?.[1]);
    }
    const got: Record<string, string | null> = {};
    for (const c of levels) got[c] = r[c] === null ? null : Number(r[c]).toFixed(8);
    if (JSON.stringify(got) !== JSON.stringify(want) && bad++ < 3)
      t.fail(`${new Date(Number(r.t)).toISOString()} ${String(r.token_id)}`, { got, want });
    const levelsNow = JSON.stringify(got);
    if (prev.has(r.token_id as string) && prev.get(r.token_id as string) !== levelsNow) changedRows++;
    prev.set(r.token_id as string, levelsNow);
  }
  t.equal(bad, 0, 'every level of every row');
  t.ok(changedRows > 300, `a token's book changed from one row to its next ${changedRows} times`);

  const enc = (
    await conn.runAndReadAll(`SELECT path_in_schema AS col, bool_or(dictionary_page_offset IS NOT NULL) AS dict
    FROM parquet_metadata('${glob}') WHERE path_in_schema IN ('bid_price_0', 'ask_size_24', 'market_id') GROUP BY ALL ORDER BY ALL`)
  ).getRowObjectsJS();
  t.same(
    enc,
    [
      { col: 'ask_size_24', dict: false },
      { col: 'bid_price_0', dict: false },
      { col: 'market_id', dict: true },
    ],
    'level columns are PLAIN, text keeps its dictionary',
  );
  const changes = `${dir}/parquet/family=coin/dataset=book_changes/**/*.parquet`;
  const price = (
    await conn.runAndReadAll(
      `SELECT bool_and(dictionary_page_offset IS NOT NULL) AS dict FROM parquet_metadata('${changes}') WHERE path_in_schema = 'price'`,
    )
  ).getRowObjectsJS();
  t.same(price, [{ dict: true }], 'book_changes prices keep theirs');
});
