// Candles (API.md §10): the route over a day's logs, the same route once the day is compacted and
// its logs deleted, and the `candles` dataset all say the same; gap seconds inside a candle, a candle
// wholly inside a gap absent; OHLC, best bid/ask and volume against DuckDB computing them from
// `book_changes` + `trades` on its own; the resolution beside the candles; bad input is a 400.

import t from 'tap';
import { DuckDBInstance } from '@duckdb/node-api';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO } from '../selfhost/helpers.js';
import { compactDay, deleteExpiredLogs } from '../../src/storage/testing.js';
import type { CoinMarket } from '../../src/schema/market.js';
import type { Observation } from '../../src/schema/observation.js';
import { bookRecords, catalog, coinMarket, keysFor, seedAll, testApp, testConfig, tmpDataDir, writeLog, T0 } from './helpers.js';

const DAY = '2026-07-26';
const MIN = 60_000;
/** A second coin market, resolved, with a four-minute hole in its books and trades throughout. */
const holed: CoinMarket = {
  ...coinMarket,
  market_id: '540900',
  condition_id: '0xc0ffee09',
  slug: 'btc-updown-15m-hole',
  outcomes: [
    { label: 'Up', token_id: '3333' },
    { label: 'Down', token_id: '4444' },
  ],
  status: 'resolved',
  resolution: 'resolved',
  winning_outcome: 'Down',
  resolved_time: T0 + 900_000,
};

async function seed(dir: string): Promise<void> {
  await seedAll(dir);
  await writeLog(dir, 'coin', 'catalog', holed.market_id, [catalog(holed, T0 - 1000)]);
  // Deltas every 500 ms for 8 minutes; disconnected from 12:00:30 to 12:04:30.
  const recs: Observation[] = bookRecords(['3333', '4444'], {
    start: T0,
    n: 960,
    stepMs: 500,
    cpEvery: 40,
    gapAt: T0 + 30_000,
    gapMs: 240_000,
    trades: true,
    seed: 5,
  });
  await writeLog(dir, 'coin', 'books', holed.market_id, recs);
}

type Json = Record<string, unknown>;

t.test('candles: route on logs = route on Parquet = dataset; gaps; DuckDB from book_changes + trades', async (t) => {
  const dir = tmpDataDir(t);
  await seed(dir);
  const { paid } = await keysFor(dir);
  const all = async (app: Awaited<ReturnType<typeof testApp>>, url: string): Promise<{ data: Json[]; market: Json }> => {
    const data: Json[] = [];
    let cursor: string | null = null;
    let market: Json = {};
    do {
      const res: { statusCode: number; json(): { data: Json[]; market: Json; next_cursor: string | null } } = await app.inject({
        method: 'GET',
        url: `${url}&limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        headers: { authorization: `Bearer ${paid}` },
      });
      t.equal(res.statusCode, 200, url);
      const page = res.json();
      if (res.statusCode !== 200) t.comment(JSON.stringify(page));
      data.push(...page.data);
      market = page.market;
      cursor = page.next_cursor;
    } while (cursor);
    return { data, market };
  };
  const urls = [
    '/v3/btc/markets/540817/candles?interval=1m',
    '/v3/btc/markets/540817/candles?interval=1m&outcome=Down',
    '/v3/btc/markets/540900/candles?interval=1m',
    '/v3/btc/markets/540900/candles?interval=1m&outcome=Down',
    '/v3/btc/markets/540900/candles?interval=5m',
    '/v3/btc/markets/540900/candles?interval=1m&order=desc',
    '/v3/wallet-prediction/w-9001/candles?interval=1m&outcome=Down',
    '/v3/yesno-exchange/KXBTC15M-26JUL261215-15/candles?interval=1m',
  ];
  const live: Record<string, { data: Json[]; market: Json }> = {};
  {
    const app = await testApp(t, testConfig(dir));
    for (const u of urls) live[u] = await all(app, u);
    const bad = await app.inject({
      method: 'GET',
      url: '/v3/btc/markets/540817/candles?interval=2m',
      headers: { authorization: `Bearer ${paid}` },
    });
    t.equal(bad.statusCode, 400);
    t.equal(bad.json().error.code, 'invalid_parameter');
    t.match(bad.json().error.message, /interval/);
    const none = await app.inject({ method: 'GET', url: '/v3/btc/markets/540817/candles', headers: { authorization: `Bearer ${paid}` } });
    t.equal(none.statusCode, 400, 'interval is required');
    const out = await app.inject({
      method: 'GET',
      url: '/v3/btc/markets/540817/candles?interval=1m&outcome=Sideways',
      headers: { authorization: `Bearer ${paid}` },
    });
    t.equal(out.json().error.code, 'invalid_parameter');
    await app.close();
  }

  const plain = live['/v3/btc/markets/540817/candles?interval=1m'].data;
  t.same(
    plain.map((c) => [c.start, c.gap_seconds]),
    [
      [new Date(T0).toISOString(), 10],
      [new Date(T0 + MIN).toISOString(), 0],
    ],
    'the 10 s gap of the first minute is its gap seconds; the last candle counts up to the last record',
  );
  const holedUp = live['/v3/btc/markets/540900/candles?interval=1m'];
  t.same(
    holedUp.data.map((c) => [(Date.parse(c.start as string) - T0) / MIN, c.gap_seconds]),
    [
      [0, 30],
      [4, 30],
      [5, 0],
      [6, 0],
      [7, 0],
      [8, 0],
    ],
    'minutes 1-3 lie wholly inside the gap: absent, never forward-filled; minutes 0 and 4 count 30 s of it',
  );
  t.same(
    holedUp.market,
    { status: 'resolved', resolution: 'resolved', winning_outcome: 'Down', resolved_time: new Date(T0 + 900_000).toISOString() },
    'the resolution beside the candles',
  );
  t.same(
    live['/v3/btc/markets/540900/candles?interval=1m&order=desc'].data,
    [...holedUp.data].reverse(),
    'desc pages are the asc candles reversed',
  );
  const five = live['/v3/btc/markets/540900/candles?interval=5m'].data;
  t.same(
    five.map((c) => [(Date.parse(c.start as string) - T0) / MIN, c.gap_seconds]),
    [
      [0, 240],
      [5, 0],
    ],
    '5 m candles count the whole hole',
  );
  t.equal(
    five[0].trades,
    holedUp.data.filter((c) => Date.parse(c.start as string) < T0 + 5 * MIN).reduce((a, c) => a + (c.trades as number), 0),
    '5 m trades = the 1 m ones summed',
  );
  const wallet = live['/v3/wallet-prediction/w-9001/candles?interval=1m&outcome=Down'].data;
  t.ok(wallet.length > 0 && wallet.every((c) => c.outcome === 'Down'), 'the mirrored outcome of a wallet market');
  const yn = live['/v3/yesno-exchange/KXBTC15M-26JUL261215-15/candles?interval=1m'].data;
  t.same(
    yn.map((c) => [c.outcome, c.units, c.best_bid, c.best_ask]),
    [['yes', 'dollars', 0.52, 0.53]],
    "yes/no: the yes side in the book's units (ask = 1 − best no bid)",
  );

  await compactDay(dir, DAY);
  await deleteExpiredLogs(dir, Date.now(), 0);
  const app = await testApp(t, testConfig(dir));
  for (const u of urls) t.same(await all(app, u), live[u], `after compaction, logs deleted: ${u}`);

  // Replay: one candle_1m line per minute with every outcome's candle, the route's; the resolution in the end line.
  const replay = async (qs: string): Promise<Json[]> => {
    const res = await app.inject({
      method: 'GET',
      url: `/v3/replay?family=coin&market_id=540900&start_time=${T0}&end_time=${T0 + 10 * MIN}&${qs}`,
      headers: { authorization: `Bearer ${paid}` },
    });
    t.equal(res.statusCode, 200, qs);
    return res.body
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Json);
  };
  const lines = await replay('types=candle_1m');
  const end = lines.pop()!;
  t.same(end.markets, [{ market_id: '540900', ...holedUp.market }], 'the end line carries the resolution and winning outcome');
  const down = live['/v3/btc/markets/540900/candles?interval=1m&outcome=Down'].data;
  t.same(
    lines.map((l) => [l.type, l.receive_time, (l.data as Json).candles]),
    holedUp.data.map((c, i) => ['candle_1m', new Date(Date.parse(c.start as string) + MIN).toISOString(), [down[i], c]]),
    "candle_1m lines are the route's candles, at each minute's end",
  );
  const resumed = await replay(
    `types=candle_1m&after=${end.next as string}`.replace(
      end.next as string,
      Buffer.from(JSON.stringify([Date.parse(lines[1].receive_time as string), '540900', lines[1].seq, 'candle_1m'])).toString('base64url'),
    ),
  );
  t.same(resumed.slice(0, -1), lines.slice(2), 'resuming after a candle line gives the ones after it');
  const mixed = await replay('types=candle_1m,trade');
  t.equal(mixed.filter((l) => l.type === 'candle_1m').length, lines.length, 'candle lines merge with the others');
  const ordered = mixed.slice(0, -1).map((l) => Date.parse(l.receive_time as string));
  t.same(
    ordered,
    [...ordered].sort((a, b) => a - b),
    'in receive-time order',
  );

  const db = await DuckDBInstance.create(':memory:');
  const conn = await db.connect();
  t.teardown(() => {
    conn.closeSync();
    db.closeSync();
  });
  const pq = (ds: string): string => `read_parquet('${dir}/parquet/family=coin/dataset=${ds}/**/*.parquet', hive_partitioning = true)`;
  const rows = (
    await conn.runAndReadAll(`SELECT market_id, outcome, epoch_ms(candle_start) AS s, mid_open::DOUBLE AS mo, mid_high::DOUBLE AS mh, mid_low::DOUBLE AS ml,
      mid_close::DOUBLE AS mc, last_open::DOUBLE AS lo, last_close::DOUBLE AS lc, best_bid::DOUBLE AS bb, best_ask::DOUBLE AS ba, volume::DOUBLE AS v, trades, gap_seconds::DOUBLE AS g
    FROM ${pq('candles')} ORDER BY market_id, candle_start, outcome`)
  ).getRowObjectsJS();
  for (const [u, market, outcome] of [
    ['/v3/btc/markets/540900/candles?interval=1m', '540900', 'Up'],
    ['/v3/btc/markets/540900/candles?interval=1m&outcome=Down', '540900', 'Down'],
    ['/v3/btc/markets/540817/candles?interval=1m', '540817', 'Up'],
  ] as const) {
    const ds = rows
      .filter((r) => r.market_id === market && r.outcome === outcome)
      .map((r) => ({
        start: new Date(Number(r.s)).toISOString(),
        outcome,
        mid: r.mo === null ? null : { open: r.mo, high: r.mh, low: r.ml, close: r.mc },
        last: r.lo === null ? null : [r.lo, r.lc],
        best_bid: r.bb,
        best_ask: r.ba,
        volume: r.v,
        trades: Number(r.trades),
        gap_seconds: r.g,
      }));
    t.same(
      ds,
      live[u].data.map((c) => ({
        start: c.start,
        outcome: c.outcome,
        mid: c.mid,
        last: c.last_trade === null ? null : [(c.last_trade as Json).open, (c.last_trade as Json).close],
        best_bid: c.best_bid,
        best_ask: c.best_ask,
        volume: c.volume,
        trades: c.trades,
        gap_seconds: c.gap_seconds,
      })),
      `the candles dataset is the route: ${market} ${outcome}`,
    );
  }

  // The markets dataset: one row per market with its identifiers, result and recorded span; the docs' join, verbatim.
  const mk = (
    await conn.runAndReadAll(`SELECT market_id, condition_id, slug, title, outcome_labels::VARCHAR AS labels, status, resolution, winning_outcome,
      epoch_ms(resolved_time) AS rt, epoch_ms(first_recorded_time) AS f, epoch_ms(last_recorded_time) AS l FROM ${pq('markets')} ORDER BY market_id`)
  ).getRowObjectsJS();
  t.same(
    mk.map((r) => r.market_id),
    ['540817', '540900'],
    'one row per coin market',
  );
  t.same(
    { ...mk[1], rt: Number(mk[1].rt), f: Number(mk[1].f), l: Number(mk[1].l) },
    {
      market_id: '540900',
      condition_id: '0xc0ffee09',
      slug: 'btc-updown-15m-hole',
      title: holed.question,
      labels: '[Up, Down]',
      status: 'resolved',
      resolution: 'resolved',
      winning_outcome: 'Down',
      rt: T0 + 900_000,
      f: T0,
      l: T0 + 480_000,
    },
  );
  const page = readFileSync(join(REPO, 'docs', 'datasets.md'), 'utf8');
  await conn.run(`SET file_search_path = '${dir}'`);
  for (const name of ['markets-join', 'candles-close']) {
    const sql = new RegExp(`<!-- query:${name} -->\\s*\`\`\`sql\\n([\\s\\S]*?)\`\`\``).exec(page)![1];
    const got = (await conn.runAndReadAll(sql)).getRowObjectsJS();
    if (name === 'markets-join') {
      const trades = got.filter((r) => r.market_id === '540900');
      t.ok(
        trades.length > 10 && trades.every((r) => r.winning_outcome === 'Down' && r.won === (r.outcome === 'Down')),
        `the docs' join: ${trades.length} trades with their market's result`,
      );
      t.equal(
        got.filter((r) => r.market_id === '540817').every((r) => r.winning_outcome === null),
        true,
        'an unresolved market joins with nulls',
      );
    } else
      t.same(
        got.map((r) => Number(r.mid_close)),
        holedUp.data.map((c) => (c.mid as Json).close),
        "the docs' candle query",
      );
  }

  // DuckDB on its own, from the record datasets: each event's top of book per token from the levels
  // alive at it (a level lives until its price changes again or a full book of its token replaces it);
  // a minute opens at the book carried from before it unless it starts inside a recorded gap.
  const indep = (
    await conn.runAndReadAll(`
    WITH bc AS (SELECT token_id, side, price, size, seq, epoch_ms(receive_time) AS t, is_snapshot FROM ${pq('book_changes')}
                WHERE market_id = '540900' AND record_type <> 'tick_size'),
    snaps AS (SELECT DISTINCT token_id, seq FROM bc WHERE is_snapshot),
    lv AS (SELECT *, lead(seq) OVER (PARTITION BY token_id, side, price ORDER BY seq) AS next_same FROM bc WHERE price IS NOT NULL),
    alive AS (SELECT lv.token_id, lv.side, lv.price, lv.seq,
                least(coalesce(next_same, 9223372036854775807), coalesce((SELECT min(s.seq) FROM snaps s WHERE s.token_id = lv.token_id AND s.seq > lv.seq), 9223372036854775807)) AS until
              FROM lv WHERE size > 0),
    ev AS (SELECT DISTINCT token_id, seq, t FROM bc),
    top AS (SELECT ev.token_id, ev.seq, ev.t, max(a.price) FILTER (WHERE a.side = 'bid') AS bid, min(a.price) FILTER (WHERE a.side = 'ask') AS ask
            FROM ev JOIN alive a ON a.token_id = ev.token_id AND a.seq <= ev.seq AND ev.seq < a.until GROUP BY ALL),
    mids AS (SELECT token_id, seq, t, bid, ask, (bid + ask) / 2 AS mid, t // 60000 * 60000 AS s FROM top),
    buckets AS (SELECT DISTINCT token_id, s FROM mids),
    holes AS (SELECT epoch_ms(start_time) AS a, epoch_ms(end_time) AS b FROM ${pq('gaps')} WHERE market_id = '540900' AND end_time IS NOT NULL),
    carried AS (SELECT b.token_id, b.s, m.mid FROM buckets b ASOF JOIN mids m ON m.token_id = b.token_id AND m.t < b.s
                WHERE NOT EXISTS (SELECT 1 FROM holes h WHERE h.a <= b.s AND b.s < h.b) -- a book is not carried across a hole
                QUALIFY row_number() OVER (PARTITION BY b.token_id, b.s ORDER BY m.seq DESC) = 1),
    tr AS (SELECT token_id, epoch_ms(receive_time) // 60000 * 60000 AS s, arg_min(price, seq) AS lo, arg_max(price, seq) AS lc, sum(size) AS v, count(*) AS n
           FROM ${pq('trades')} WHERE market_id = '540900' GROUP BY ALL)
    SELECT m.token_id, m.s, coalesce(any_value(c.mid), arg_min(m.mid, m.seq))::DOUBLE AS mo, greatest(max(m.mid), any_value(c.mid))::DOUBLE AS mh,
      least(min(m.mid), any_value(c.mid))::DOUBLE AS ml, arg_max(m.mid, m.seq)::DOUBLE AS mc, arg_max(m.bid, m.seq)::DOUBLE AS bb, arg_max(m.ask, m.seq)::DOUBLE AS ba,
      any_value(tr.lo)::DOUBLE AS lo, any_value(tr.lc)::DOUBLE AS lc, coalesce(any_value(tr.v), 0)::DOUBLE AS v, coalesce(any_value(tr.n), 0) AS n
    FROM mids m LEFT JOIN carried c USING (token_id, s) LEFT JOIN tr USING (token_id, s) GROUP BY m.token_id, m.s ORDER BY m.token_id, m.s`)
  ).getRowObjectsJS();
  const route = [
    ...live['/v3/btc/markets/540900/candles?interval=1m'].data.map((c) => ['3333', c] as const),
    ...live['/v3/btc/markets/540900/candles?interval=1m&outcome=Down'].data.map((c) => ['4444', c] as const),
  ];
  // Minutes with a book event; a minute whose book only carried over (no event) has no row in `mids`.
  let compared = 0;
  for (const [token, c] of route) {
    const s = Date.parse(c.start as string);
    const r = indep.find((x) => x.token_id === token && Number(x.s) === s);
    if (!r) continue;
    compared++;
    const near = (a: unknown, b: unknown): boolean => (a === null || b === null ? a === b : Math.abs(Number(a) - Number(b)) < 1e-9);
    const mid = c.mid as Json;
    const lt = c.last_trade as Json | null;
    const ok =
      near(mid.open, r.mo) &&
      near(mid.high, r.mh) &&
      near(mid.low, r.ml) &&
      near(mid.close, r.mc) &&
      near(c.best_bid, r.bb) &&
      near(c.best_ask, r.ba) &&
      near(lt?.open ?? null, r.lo) &&
      near(lt?.close ?? null, r.lc) &&
      near(c.volume, r.v) &&
      c.trades === Number(r.n);
    if (!ok)
      t.fail(
        `${token} ${c.start as string}: route ${JSON.stringify(c)} vs DuckDB ${JSON.stringify(r, (_, v: unknown) => (typeof v === 'bigint' ? Number(v) : v))}`,
      );
  }
  t.ok(compared >= 10, `${compared} candles checked against DuckDB`);
  t.equal(
    indep.filter((r) => Number(r.s) >= T0 + MIN && Number(r.s) < T0 + 4 * MIN).length,
    0,
    'DuckDB sees no book event inside the hole either',
  );
});
