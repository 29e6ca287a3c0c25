// The read side answers every route identically before and after compaction (and after the
// compacted logs are deleted), and DuckDB reading the downloaded Parquet returns the same rows and
// values the API returns for the same range.

import t from 'tap';
import { DuckDBInstance } from '@duckdb/node-api';
import { compactDay } from '../../src/storage/parquet/compaction.js';
import { deleteExpiredLogs } from '../../src/storage/parquet/retention.js';
import { listDays } from '../../src/storage/paths.js';
import { keysFor, seedAll, testApp, testConfig, tmpDataDir, T0 } from './helpers.js';

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
  t.ok([...before.values()].every((pages) => (pages[0] as { status: number }).status === 200), 'every route answers 200 on the logs');

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
    t.teardown(() => { conn.closeSync(); db.closeSync(); });
    const from = T0 + 10_000;
    const to = T0 + 40_000;
    const api = await app.inject({
      method: 'GET', url: `/v3/yesno-exchange/${TICKER}/snapshots?include_orderbook=true&start_time=${from}&end_time=${to}&limit=1000`,
      headers: { authorization: `Bearer ${paid}` },
    });
    const snaps = api.json().data as { seq: number; receive_time: string; yes: { prices: string[]; sizes: string[] }; no: { prices: string[] } }[];
    const rows = (await conn.runAndReadAll(`SELECT seq, strftime(receive_time AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%S.%g') || 'Z' AS receive_time,
        yes_prices, yes_sizes, no_prices FROM read_parquet('${dir}/parquet/family=yesno-exchange/dataset=books/**/*.parquet', hive_partitioning=true)
        WHERE market_id = '${TICKER}' AND receive_time >= epoch_ms(${from}) AND receive_time < epoch_ms(${to}) ORDER BY seq`)).getRowObjectsJS();
    t.equal(rows.length, snaps.length);
    // The one-liner of docs/datasets.md ("Open the data"), verbatim, from inside the data dir.
    await conn.run(`SET file_search_path = '${dir}'`);
    const readme = (await conn.runAndReadAll(`SELECT * FROM read_parquet('parquet/family=coin/dataset=books/**/*.parquet', hive_partitioning=true)
WHERE market_id = '540817' AND receive_time >= '2026-07-26 12:00:00+00' ORDER BY seq;`)).getRowObjectsJS();
    t.ok(readme.length > 400 && readme.every((r, i) => i === 0 || Number(r.seq) > Number(readme[i - 1].seq)), 'the docs/datasets.md query reads the tree as is');
    t.ok(rows.length >= 20);
    t.same(rows.map((r) => ({ seq: Number(r.seq), receive_time: r.receive_time, yes: { prices: r.yes_prices, sizes: r.yes_sizes }, no: r.no_prices })),
      snaps.map((s) => ({ seq: s.seq, receive_time: s.receive_time, yes: { prices: s.yes.prices, sizes: s.yes.sizes }, no: s.no.prices })));

    const w = await app.inject({ method: 'GET', url: `/v3/wallet-prediction/w-9001/snapshots?start_time=${from}&end_time=${to}&limit=1000`, headers: { authorization: `Bearer ${paid}` } });
    const ws = w.json().data as { seq: number; bids: [number, number][]; asks: [number, number][] }[];
    const wr = (await conn.runAndReadAll(`SELECT seq, bid_prices, bid_sizes, ask_prices, ask_sizes FROM read_parquet('${dir}/parquet/family=wallet-prediction/dataset=books/**/*.parquet', hive_partitioning=true)
        WHERE market_id = 'w-9001' AND bid_prices IS NOT NULL AND receive_time >= epoch_ms(${from}) AND receive_time < epoch_ms(${to}) ORDER BY seq`)).getRowObjectsJS();
    const zip = (p: number[], s: number[]) => p.map((x, i) => [x, s[i]]);
    t.ok(ws.length > 50);
    t.same(wr.map((r) => ({ seq: Number(r.seq), bids: zip(r.bid_prices as number[], r.bid_sizes as number[]), asks: zip(r.ask_prices as number[], r.ask_sizes as number[]) })),
      ws.map((s) => ({ seq: s.seq, bids: s.bids, asks: s.asks })), 'full books after every delta match the API snapshots');
  });
});
