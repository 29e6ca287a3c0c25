// The read side answers every route identically before and after compaction (and after the
// compacted logs are deleted), and DuckDB reading the downloaded Parquet returns the same rows and
// values the API returns for the same range.

import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { compactDay, deleteExpiredLogs, listDays } from '../../src/storage/testing.js';
import { keysFor, seedAll, testApp, testConfig, tmpDataDir, T0 } from './helpers.js';
import { REPO } from '../selfhost/helpers.js';

const DAY = '2026-07-26';
const iso = (ms: number) => new Date(ms).toISOString();
const TICKER = 'KXBTC15M-26JUL261215-15';

/** Every route with parameters that exercise pages, ranges, as-of, intervals and mirrors. */
const ROUTES = [
  '/v3/btc/markets',
  '/v3/btc/markets/540817/snapshots?include_orderbook=true&limit=60',
  `/v3/btc/markets/540817/snapshots?include_orderbook=true&interval=1s&end_time=${iso(T0 + 200_000)}&limit=40`,
  `/v3/btc/markets/540817/snapshots?include_orderbook=true&end_time=${iso(T0 + 45_000)}&order=desc&limit=15`,
  `/v3/btc/markets/540817/snapshots?start_time=${iso(T0 + 20_000)}&end_time=${iso(T0 + 70_000)}&depth=2&include_orderbook=true&limit=25`,
  '/v3/btc/markets/540817/orderbook/latest',
  '/v3/wallet-prediction/markets',
  '/v3/wallet-prediction/w-9001/snapshots?limit=70',
  '/v3/wallet-prediction/w-9001/snapshots?outcome=Down&depth=3&limit=70',
  `/v3/wallet-prediction/w-9001/snapshots?end_time=${iso(T0 + 30_000)}&order=desc&limit=1`,
  '/v3/wallet-prediction/w-9001/orderbook/latest',
  `/v3/wallet-prediction/w-9001/orderbook/latest?as_of=${iso(T0 + 33_333)}`,
  `/v3/wallet-prediction/w-9001/orderbook/latest?as_of=${T0 + 50_001}&outcome=Down`,
  '/v3/wallet-prediction/w-9001/timeseries?metric=chance&limit=10',
  '/v3/wallet-prediction/w-9001/timeseries?metric=price&outcome=Down',
  '/v3/wallet-prediction/w-9001/trades',
  '/v3/partner-venue/w-9001/snapshots?limit=50',
  '/v3/yesno-exchange/markets',
  `/v3/yesno-exchange/${TICKER}/snapshots?include_orderbook=true&limit=25`,
  `/v3/yesno-exchange/${TICKER}/snapshots?depth=2&include_orderbook=true&start_time=${iso(T0 + 10_000)}&limit=7`,
  `/v3/yesno-exchange/${TICKER}/orderbook/latest`,
  '/v3/coverage',
  '/v3/coverage?market_id=540817',
  '/v3/coverage?family=wallet-prediction&market_id=w-9001',
  `/v3/coverage?ticker=${TICKER}&start_time=${iso(T0)}&end_time=${iso(T0 + 3_600_000)}`,
];

type Get = (path: string) => Promise<{ status: number; body: any }>;

/** A SQL block of the datasets docs page, marked `<!-- query:NAME -->`. */
function docQuery(name: string): string {
  const page = readFileSync(join(REPO, 'docs', 'datasets.md'), 'utf8');
  const m = new RegExp(`<!-- query:${name} -->\\s*\`\`\`sql\\n([\\s\\S]*?)\`\`\``).exec(page);
  if (!m) throw new Error(`the datasets page has no <!-- query:${name} --> block`);
  return m[1];
}

/** Every page of a route, following next_cursor (bounded). */
async function allPages(get: Get, path: string): Promise<unknown[]> {
  const pages: unknown[] = [];
  let url: string | null = path;
  for (let i = 0; url && i < 50; i++) {
    const r = await get(url);
    pages.push({ status: r.status, body: r.body?.error ? { ...r.body.error, request_id: undefined } : r.body });
    const c: string | null | undefined = r.body?.next_cursor;
    url = c ? `${path}${path.includes('?') ? '&' : '?'}cursor=${encodeURIComponent(c)}` : null;
  }
  return pages;
}

t.test('routes answer identically before and after compaction', async (t) => {
  const dir = tmpDataDir(t);
  await seedAll(dir);
  const { paid } = await keysFor(dir);
  const config = testConfig(dir);
  const snapshot = async (): Promise<Map<string, unknown[]>> => {
    const app = await testApp(t, config);
    const get: Get = async (path) => {
      const r = await app.inject({ method: 'GET', url: path, headers: { authorization: `Bearer ${paid}` } });
      return { status: r.statusCode, body: r.json() };
    };
    const out = new Map<string, unknown[]>();
    for (const route of ROUTES) out.set(route, await allPages(get, route));
    await app.close();
    return out;
  };
  const before = await snapshot();
  t.ok(
    [...before.values()].every((pages) => (pages[0] as { status: number }).status === 200),
    'every route answers 200 on the logs',
  );

  await compactDay(dir, DAY);
  const afterCompaction = await snapshot();
  for (const route of ROUTES) t.same(afterCompaction.get(route), before.get(route), `compacted, logs kept: ${route}`);

  const ret = await deleteExpiredLogs(dir, Date.now(), 0);
  t.ok(ret.deleted.length >= 7, 'the compacted logs are deleted');
  t.same(await listDays(dir, { family: 'coin', stream: 'books', market: '540817' }), [], 'no log left for the day');
  const afterDeletion = await snapshot();
  for (const route of ROUTES) t.same(afterDeletion.get(route), before.get(route), `served from Parquet: ${route}`);

  t.test('DuckDB reads the same rows and values the API returns for a range', async (t) => {
    const app = await testApp(t, config);
    const db = await DuckDBInstance.create(':memory:');
    const conn = await db.connect();
    t.teardown(() => {
      conn.closeSync();
      db.closeSync();
    });
    const from = T0 + 10_000;
    const to = T0 + 40_000;
    const api = await app.inject({
      method: 'GET',
      url: `/v3/yesno-exchange/${TICKER}/snapshots?include_orderbook=true&start_time=${from}&end_time=${to}&limit=1000`,
      headers: { authorization: `Bearer ${paid}` },
    });
    const snaps = api.json().data as {
      seq: number;
      receive_time: string;
      yes: { prices: string[]; sizes: string[] };
      no: { prices: string[] };
    }[];
    // Each poll is a full book: its rows, in file order, are the two ladders best first.
    const rows = (
      await conn.runAndReadAll(`SELECT seq, strftime(any_value(receive_time) AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%S.%g') || 'Z' AS receive_time,
        list(price::VARCHAR ORDER BY file_row_number) FILTER (side = 'yes') AS yes_prices, list(size::VARCHAR ORDER BY file_row_number) FILTER (side = 'yes') AS yes_sizes,
        list(price::VARCHAR ORDER BY file_row_number) FILTER (side = 'no') AS no_prices, bool_and(price_decimals = 4) AS four
        FROM read_parquet('${dir}/parquet/family=yesno-exchange/dataset=book_changes/**/*.parquet', hive_partitioning=true, file_row_number=true)
        WHERE market_id = '${TICKER}' AND receive_time >= epoch_ms(${from}) AND receive_time < epoch_ms(${to}) GROUP BY seq ORDER BY seq`)
    ).getRowObjectsJS();
    t.equal(rows.length, snaps.length);
    t.ok(
      rows.every((r) => r.four === true),
      'dollar prices were written with four decimals: DECIMAL(18,4) prints them as sent',
    );
    // The docs' one-liner, verbatim, from inside the data dir.
    await conn.run(`SET file_search_path = '${dir}'`);
    const doc = (await conn.runAndReadAll(docQuery('duckdb').replaceAll("'data/parquet/", "'parquet/"))).getRowObjectsJS();
    t.ok(
      doc.length >= 1 && doc.some((r) => r.market_id === '540817' && Number(r.records) > 300 && Number(r.rows) > Number(r.records)),
      'the docs query reads the tree as is',
    );
    t.ok(rows.length >= 20);
    t.same(
      rows.map((r) => ({
        seq: Number(r.seq),
        receive_time: r.receive_time,
        yes: { prices: r.yes_prices, sizes: r.yes_sizes },
        no: r.no_prices,
      })),
      snaps.map((s) => ({ seq: s.seq, receive_time: s.receive_time, yes: { prices: s.yes.prices, sizes: s.yes.sizes }, no: s.no.prices })),
    );

    // The docs' book rebuild from book_changes alone equals the API's as-of book, level for level.
    const rebuild = docQuery('rebuild-book');
    let compared = 0;
    for (const at of [T0 + 1, T0 + 7_777, T0 + 33_333, T0 + 50_001, T0 + 59_999]) {
      const api = await app.inject({
        method: 'GET',
        url: `/v3/wallet-prediction/w-9001/orderbook/latest?as_of=${at}`,
        headers: { authorization: `Bearer ${paid}` },
      });
      const book = api.json().data as { bids: [number, number][]; asks: [number, number][] };
      const sql = rebuild.replace(/SET VARIABLE as_of = [^;]+;/, `SET VARIABLE as_of = TIMESTAMPTZ '${iso(at)}';`);
      const stmts = sql
        .split(';')
        .map((x) => x.trim())
        .filter(Boolean);
      for (const st of stmts.slice(0, -1)) await conn.run(st);
      const lv = (await conn.runAndReadAll(stmts[stmts.length - 1])).getRowObjectsJS();
      const side = (s: string) => lv.filter((r) => r.side === s && r.token_id === '7001').map((r) => [Number(r.price), Number(r.size)]);
      t.same({ bids: side('bid'), asks: side('ask') }, { bids: book.bids, asks: book.asks }, `as of ${iso(at)}`);
      compared += book.bids.length + book.asks.length;
    }
    t.ok(compared > 20, `${compared} levels compared`);
  });
});
