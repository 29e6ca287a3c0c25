// Two independent readers open the whole compacted tree as it is: DuckDB and polars (the Rust
// reader), each with Hive partitioning, agree row for row and value for value on every (family,
// dataset), and what they read is what the API serves from the same files (logs deleted).

import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO } from '../selfhost/helpers.js';
import { DuckDBInstance } from '@duckdb/node-api';
import pl from 'nodejs-polars';
import { duckExpr, polarsExpr } from './engine-text.js';
import { compactDay, deleteExpiredLogs, listPartitions, readManifest, columnsOf, type Dataset } from '../../src/storage/testing.js';
import type { Family } from '../../src/schema/observation.js';
import { keysFor, seedAll, testApp, testConfig, tmpDataDir, T0 } from './helpers.js';

const DAY = '2026-07-26';
const TICKER = 'KXBTC15M-26JUL261215-15';

t.test('DuckDB and polars read every dataset of the tree identically, and as the API serves it', async (t) => {
  const dir = tmpDataDir(t);
  await seedAll(dir);
  await compactDay(dir, DAY);
  await deleteExpiredLogs(dir, Date.now(), 0); // the API serves the day from these files only
  const db = await DuckDBInstance.create(':memory:');
  const conn = await db.connect();
  t.teardown(() => {
    conn.closeSync();
    db.closeSync();
  });

  const pairs = new Set<string>();
  for (const p of await listPartitions(dir)) if ((await readManifest(p.dir))!.files.length) pairs.add(`${p.family}/${p.dataset}`);
  t.ok(pairs.size >= 9, `${pairs.size} (family, dataset) pairs`);
  const tree: Record<string, Record<string, unknown>[]> = {};
  for (const pair of pairs) {
    const [family, dataset] = pair.split('/') as [Family, Dataset];
    const cols = columnsOf(family, dataset);
    const glob = `${dir}/parquet/family=${family}/dataset=${dataset}/**/*.parquet`;
    const duck = (
      await conn.runAndReadAll(`SELECT ${cols.map(duckExpr).join(', ')}, date::VARCHAR AS date, family, dataset
      FROM read_parquet('${glob}', hive_partitioning = true) ORDER BY market_id, ${dataset === 'book_snapshots' ? 'bucket_start, token_id' : dataset === 'candles' ? 'candle_start, outcome' : 'receive_time, seq'}`)
    ).getRowObjectsJS() as Record<string, unknown>[];
    const polars = pl
      .scanParquet(glob, { hivePartitioning: true, tryParseHiveDates: false })
      .select(...cols.map(polarsExpr), pl.col('date').cast(pl.Utf8), pl.col('family'), pl.col('dataset'))
      .collectSync()
      .toRecords() as Record<string, unknown>[];
    t.equal(polars.length, duck.length, `${pair}: same row count (${duck.length})`);
    let bad = 0;
    duck.forEach((d, i) => {
      const p = polars[i];
      for (const c of [...cols.map((x) => x.name), 'date', 'family', 'dataset']) {
        const kind = cols.find((x) => x.name === c)?.kind ?? 'utf8';
        const pv = kind.startsWith('list_') ? (p[c] === null ? null : JSON.stringify(p[c])) : p[c];
        const dv = kind.startsWith('list_') && d[c] !== null ? JSON.stringify(JSON.parse(d[c] as string)) : d[c];
        if ((dv ?? null) !== (pv ?? null) && bad++ < 3)
          t.fail(`${pair} row ${i} column ${c}: DuckDB ${String(dv)} vs polars ${String(pv)}`);
      }
    });
    t.equal(bad, 0, `${pair}: DuckDB and polars agree on every value`);
    tree[pair] = duck;
  }

  const { paid } = await keysFor(dir);
  const app = await testApp(t, testConfig(dir));
  const get = async (url: string) => (await app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${paid}` } })).json();

  t.test("yes/no: each poll's rows are the snapshot the API serves, in native text", async (t) => {
    const snaps = (await get(`/v3/yesno-exchange/${TICKER}/snapshots?include_orderbook=true&limit=1000`)).data as {
      seq: number;
      yes: { prices: string[]; sizes: string[] };
      no: { prices: string[]; sizes: string[] };
    }[];
    const rows = tree['yesno-exchange/book_changes'];
    const bySeq = new Map<number, { yes: { prices: string[]; sizes: string[] }; no: { prices: string[]; sizes: string[] } }>();
    // Printing the DECIMAL with `price_decimals` digits gives the venue's text back.
    const text = (v: unknown, scale: number, d: unknown): string => {
      const s = String(v);
      return Number(d) === scale ? s : Number(s).toFixed(Number(d));
    };
    for (const r of rows) {
      const s = Number(r.seq);
      if (!bySeq.has(s)) bySeq.set(s, { yes: { prices: [], sizes: [] }, no: { prices: [], sizes: [] } });
      if (r.price === null) continue;
      const side = bySeq.get(s)![r.side as 'yes' | 'no'];
      side.prices.push(text(r.price, 4, r.price_decimals));
      side.sizes.push(text(r.size, 2, r.size_decimals));
    }
    t.equal(bySeq.size, snaps.length);
    t.same(
      snaps.map((s) => ({ seq: s.seq, yes: s.yes, no: s.no })),
      [...bySeq.entries()].map(([seq, v]) => ({ seq, ...v })),
    );
  });

  t.test("coin book_snapshots: every valid second is the API's interval=1s snapshot at depth 25, and no other", async (t) => {
    const api: {
      bucket_start: string;
      receive_time: string;
      seq: number;
      books: { token_id: string; outcome: string; bids: number[][]; asks: number[][] }[];
    }[] = [];
    let cursor: string | null = null;
    do {
      const page = await get(
        `/v3/btc/markets/540817/snapshots?interval=1s&depth=25&include_orderbook=true&limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      api.push(...page.data);
      cursor = page.next_cursor;
    } while (cursor);
    const rows = tree['coin/book_snapshots'].filter((r) => r.market_id === '540817');
    t.ok(api.length > 60, `${api.length} seconds served`);
    const want = api.flatMap((s) =>
      s.books.map((b) => ({
        bucket_start: Date.parse(s.bucket_start) * 1000,
        receive_time: Date.parse(s.receive_time) * 1000,
        seq: s.seq,
        token_id: b.token_id,
        outcome: b.outcome,
        bids: b.bids,
        asks: b.asks,
        best_bid: b.bids[0]?.[0] ?? null,
        best_ask: b.asks[0]?.[0] ?? null,
      })),
    );
    const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));
    const got = rows.map((r) => {
      const side = (p: string): number[][] => {
        const out: number[][] = [];
        for (let i = 0; i < 25 && r[`${p}_price_${i}`] !== null; i++) out.push([Number(r[`${p}_price_${i}`]), Number(r[`${p}_size_${i}`])]);
        return out;
      };
      return {
        bucket_start: Number(r.bucket_start),
        receive_time: Number(r.receive_time),
        seq: Number(r.seq),
        token_id: r.token_id,
        outcome: r.outcome,
        bids: side('bid'),
        asks: side('ask'),
        best_bid: num(r.best_bid),
        best_ask: num(r.best_ask),
      };
    });
    t.equal(got.length, want.length, 'one row per outcome of every second the API serves');
    t.same(got, want);
    const withBoth = rows.filter((r) => r.best_bid !== null && r.best_ask !== null);
    t.ok(
      withBoth.length > 0 && withBoth.every((r) => Number(r.mid) === (Number(r.best_bid) + Number(r.best_ask)) / 2),
      'mid is the exact midpoint',
    );
    const gapSeconds = rows.filter((r) => Number(r.bucket_start) >= (T0 + 40_000) * 1000 && Number(r.bucket_start) < (T0 + 50_000) * 1000);
    t.equal(gapSeconds.length, 0, 'no row inside the recorded gap');

    // The datasets page's spread query, verbatim, from inside the data dir: one row per Up second.
    const page = readFileSync(join(REPO, 'docs', 'datasets.md'), 'utf8');
    const sql = /<!-- query:snapshots-spread -->\s*```sql\n([\s\S]*?)```/.exec(page)![1];
    await conn.run(`SET file_search_path = '${dir}'`);
    const spread = (await conn.runAndReadAll(sql)).getRowObjectsJS();
    t.equal(spread.length, api.length, 'the docs query: one row per second the API serves');
    t.ok(
      spread.every((r) => r.spread === null || Number(r.spread) >= 0),
      'spreads are never negative',
    );
  });

  t.test("wallet metrics: the chance series the API serves is the tree's chance rows", async (t) => {
    const api = (await get('/v3/wallet-prediction/w-9001/timeseries?metric=chance&limit=1000')).data as { value: number }[];
    const rows = tree['wallet-prediction/metrics'].filter((r) => r.metric === 'chance' && r.outcome === 'Up'); // the first outcome by default
    t.ok(api.length >= 10);
    t.same(
      api.map((x) => x.value),
      rows.map((r) => Number(r.value)),
    );
  });

  t.test("catalog: the markets the API lists are the tree's catalogue rows", async (t) => {
    const coin = (await get('/v3/btc/markets')).data as { market_id: string; question: string; status: string; native: unknown }[];
    const row = tree['coin/catalog'].find((r) => r.market_id === '540817')!;
    const m = coin.find((x) => x.market_id === '540817')!;
    t.equal(row.question, m.question);
    t.equal(row.status, m.status);
    t.same(JSON.parse(row.native as string), m.native);
  });

  t.test('coin trades and gaps: one row per trade and per gap record, with exact prices', async (t) => {
    const trades = tree['coin/trades'];
    t.ok(trades.length > 0);
    t.ok(
      trades.every((r) => /^0\.\d{8}$/.test(String(r.price))),
      'DECIMAL(18,8) prices',
    );
    const gaps = tree['coin/gaps'];
    t.same(
      gaps.map((g) => [g.reason, g.end_time === null]),
      [
        ['disconnected', true],
        ['disconnected', false],
      ],
    );
    const cov = (await get('/v3/coverage?market_id=540817')).data;
    t.ok(JSON.stringify(cov).includes('disconnected'), 'the API reports the same gap');
  });
});
