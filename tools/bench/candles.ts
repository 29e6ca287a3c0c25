// `npm run bench -- candles`: the 1 m candles of a day of every market (both outcomes of 4 coin
// markets and a wallet market), by pmtape's candle code from the compacted Parquet, against DuckDB
// computing the same candles (OHLC of the mid, best bid/ask at the close, trade OHLC, volume and
// count) from `book_changes` + `trades` of the same files, in the same run. DuckDB gets the easier
// job: it does not work out gap seconds nor drop candles inside gaps.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { DAY_MS, dayStartMs, utcDay } from '../../src/schema/time.js';
import type { Family } from '../../src/schema/observation.js';
import { compactDay, deleteExpiredLogs, parquetStore } from '../../src/storage/testing.js';
import { candlesOf, openReader } from '../../src/storage/index.js';
import { writeFixture } from '../fixtures/compaction-logs.js';

const log = (s: string): void => void process.stderr.write(`bench candles: ${s}\n`);
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const round = (x: number, d = 2): number => Math.round(x * 10 ** d) / 10 ** d;

/** DuckDB's candles of one family's day: the SQL of test/api/candles.test.ts, for every market. */
const duckSql = (glob: (ds: string) => string): string => `
  WITH bc AS (SELECT market_id, token_id, side, price, size, seq, epoch_ms(receive_time) AS t, is_snapshot FROM ${glob('book_changes')} WHERE record_type <> 'tick_size'),
  snaps AS (SELECT DISTINCT market_id, token_id, seq FROM bc WHERE is_snapshot),
  lv AS (SELECT *, lead(seq) OVER (PARTITION BY market_id, token_id, side, price ORDER BY seq) AS next_same FROM bc WHERE price IS NOT NULL),
  nextsnap AS (SELECT lv.market_id, lv.token_id, lv.side, lv.price, lv.seq, lv.size, lv.next_same, s.seq AS snap
               FROM lv ASOF LEFT JOIN (SELECT market_id, token_id, seq FROM snaps) s ON s.market_id = lv.market_id AND s.token_id = lv.token_id AND s.seq > lv.seq),
  alive AS (SELECT market_id, token_id, side, price, seq, least(coalesce(next_same, 9223372036854775807), coalesce(snap, 9223372036854775807)) AS until FROM nextsnap WHERE size > 0),
  ev AS (SELECT DISTINCT market_id, token_id, seq, t FROM bc),
  top AS (SELECT ev.market_id, ev.token_id, ev.seq, ev.t, max(a.price) FILTER (WHERE a.side = 'bid') AS bid, min(a.price) FILTER (WHERE a.side = 'ask') AS ask
          FROM ev JOIN alive a ON a.market_id = ev.market_id AND a.token_id = ev.token_id AND a.seq <= ev.seq AND ev.seq < a.until GROUP BY ALL),
  mids AS (SELECT *, (bid + ask) / 2 AS mid, t // 60000 * 60000 AS s FROM top),
  buckets AS (SELECT DISTINCT market_id, token_id, s FROM mids),
  carried AS (SELECT b.market_id, b.token_id, b.s, m.mid FROM buckets b ASOF LEFT JOIN mids m ON m.market_id = b.market_id AND m.token_id = b.token_id AND m.t < b.s),
  tr AS (SELECT market_id, token_id, epoch_ms(receive_time) // 60000 * 60000 AS s, arg_min(price, seq) AS lo, max(price) AS lh, min(price) AS ll, arg_max(price, seq) AS lc,
         sum(size) AS v, count(*) AS n FROM ${glob('trades')} GROUP BY ALL)
  SELECT m.market_id, m.token_id, m.s, coalesce(any_value(c.mid), arg_min(m.mid, m.seq)) AS mo, greatest(max(m.mid), any_value(c.mid)) AS mh,
    least(min(m.mid), any_value(c.mid)) AS ml, arg_max(m.mid, m.seq) AS mc, arg_max(m.bid, m.seq) AS bb, arg_max(m.ask, m.seq) AS ba,
    any_value(tr.lo) AS lo, any_value(tr.lh) AS lh, any_value(tr.ll) AS ll, any_value(tr.lc) AS lc, coalesce(any_value(tr.v), 0) AS v, coalesce(any_value(tr.n), 0) AS n
  FROM mids m LEFT JOIN carried c USING (market_id, token_id, s) LEFT JOIN tr USING (market_id, token_id, s) GROUP BY m.market_id, m.token_id, m.s`;

export async function run(): Promise<Record<string, unknown>> {
  const dir = await mkdtemp(join(tmpdir(), 'pmtape-bench-candles-'));
  try {
    const day = utcDay(Date.now() - 2 * DAY_MS);
    const booksPerDay = Number(process.env.PMTAPE_BENCH_BOOKS ?? 20_000);
    const levels = Number(process.env.PMTAPE_BENCH_LEVELS ?? 12);
    log(`writing logs: 4 coin markets (both outcomes) + 1 wallet market × ${booksPerDay} book observations, ${levels} levels a side`);
    await writeFixture(dir, { days: [day], booksPerDay, coinMarkets: 4, levels, bothOutcomes: true });
    log('compacting, then deleting the logs (both sides read the same Parquet)');
    const results = await compactDay(dir, day);
    await deleteExpiredLogs(dir, Date.now(), 0);
    const changes = results.filter((r) => r.dataset === 'book_changes').reduce((a, r) => a + r.rows, 0);
    const markets: [Family, string, { label: string; token_id: string }[]][] = [
      ...['50000', '50001', '50002', '50003'].map(
        (m) =>
          [
            'coin',
            m,
            [
              { label: 'Up', token_id: `${m}-up` },
              { label: 'Down', token_id: `${m}-down` },
            ],
          ] as [Family, string, { label: string; token_id: string }[]],
      ),
      [
        'wallet-prediction',
        'w-1',
        [
          { label: 'Up', token_id: 'w-1-up' },
          { label: 'Down', token_id: 'w-1-down' },
        ],
      ],
    ];
    const start = dayStartMs(day)!;
    const store = parquetStore(dir);
    const pmtape = async (): Promise<{ ms: number; candles: number }> => {
      const t0 = performance.now();
      let n = 0;
      for (const [family, market, outcomes] of markets) {
        const view = await openReader(dir, { family, stream: 'books', market }, store).view();
        n += (await candlesOf(view, { family, market, outcomes, intervalMs: 60_000, start, end: start + DAY_MS })).length;
      }
      return { ms: performance.now() - t0, candles: n };
    };
    const db = await DuckDBInstance.create(':memory:');
    const conn = await db.connect();
    const duck = async (): Promise<{ ms: number; candles: number }> => {
      const t0 = performance.now();
      let n = 0;
      for (const family of ['coin', 'wallet-prediction']) {
        const glob = (ds: string): string =>
          `read_parquet('${dir}/parquet/family=${family}/dataset=${ds}/**/*.parquet', hive_partitioning = true)`;
        n += (await conn.runAndReadAll(duckSql(glob))).currentRowCount;
      }
      return { ms: performance.now() - t0, candles: n };
    };
    const runs = Number(process.env.PMTAPE_BENCH_RUNS ?? 3);
    const p: { ms: number; candles: number }[] = [];
    const d: { ms: number; candles: number }[] = [];
    for (let i = 0; i < runs; i++) {
      log(`run ${i + 1}/${runs}: pmtape`);
      p.push(await pmtape());
      log(`run ${i + 1}/${runs}: DuckDB`);
      d.push(await duck());
    }
    conn.closeSync();
    db.closeSync();
    const pm = median(p.map((x) => x.ms));
    const dm = median(d.map((x) => x.ms));
    return {
      day,
      markets: markets.length,
      book_changes_rows: changes,
      pmtape_candles: p[0].candles,
      duckdb_candles: d[0].candles,
      pmtape_ms: round(pm, 1),
      duckdb_ms: round(dm, 1),
      pmtape_runs_ms: p.map((x) => round(x.ms, 1)),
      duckdb_runs_ms: d.map((x) => round(x.ms, 1)),
      speedup_vs_duckdb: round(dm / pm),
      target: 3,
      met: dm / pm >= 3,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
