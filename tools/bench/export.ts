// `npm run bench -- export`: the Tardis-format route (`GET /v1/pmtape-clob/incremental_book_L2/...`)
// against DuckDB writing the same CSV.gz from the same Parquet (`COPY (SELECT ...) TO 'x.csv.gz'`),
// on one compacted day of one busy coin market (both outcome books), same machine, one run. Figures:
// rows/s of each (rows written / wall seconds; the route's time is the whole download by a local
// client), their ratio, the output sizes, and the server's RSS while it streams the whole day; and a
// second baseline beside it, DuckDB writing the same rows as plain CSV (no gzip).

import { readFileSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { DuckDBInstance } from '@duckdb/node-api';
import { startServe, stopServe } from './serve.js';
import { createKey } from '../../src/api/plugins/keys.js';
import { DAY_MS, utcDay } from '../../src/schema/time.js';
import { compactDay, deleteExpiredLogs } from '../../src/storage/testing.js';
import { writeFixture } from '../fixtures/compaction-logs.js';

const round = (x: number, d = 2): number => Math.round(x * 10 ** d) / 10 ** d;
const log = (s: string): void => void process.stderr.write(`bench export: ${s}\n`);
const ROUNDS = Number(process.env.PMTAPE_BENCH_ROUNDS ?? 3);
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function rssBytes(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : NaN;
}

export async function run(): Promise<Record<string, unknown>> {
  const dir = await mkdtemp(join(tmpdir(), 'pmtape-bench-export-'));
  try {
    const day = utcDay(Date.now() - 2 * DAY_MS);
    const booksPerDay = Number(process.env.PMTAPE_BENCH_BOOKS ?? 200_000);
    const levels = Number(process.env.PMTAPE_BENCH_LEVELS ?? 50);
    log(`writing logs: one coin market, ${booksPerDay} book observations (both outcomes, ${levels} levels a side) on ${day}`);
    await writeFixture(dir, { days: [day], booksPerDay, coinMarkets: 1, bothOutcomes: true, levels });
    log('compacting the day and deleting its logs');
    await compactDay(dir, day);
    await deleteExpiredLogs(dir, Date.now(), 0);
    const key = (await createKey(dir, 'paid', 'bench')).key;
    const [y, m, d] = day.split('-');

    // Route and DuckDB alternate, ROUNDS times, and each side's median counts: on a shared machine
    // the load moves between runs, and measured one after the other the ratio moved from 0.7 to 2.5.
    const loadStart = loadavg()[0];
    const db = await DuckDBInstance.create(':memory:');
    const conn = await db.connect();
    const out = join(dir, 'duckdb.csv.gz');
    const sql = `COPY (SELECT 'pmtape-clob' AS exchange, '50000-UP' AS symbol,
        epoch_us(coalesce(source_time, receive_time)) AS "timestamp", epoch_us(receive_time) AS local_timestamp,
        is_snapshot, side, price, size AS amount
      FROM read_parquet('${dir}/parquet/family=coin/dataset=book_changes/**/*.parquet', hive_partitioning = true)
      WHERE market_id = '50000' AND token_id = '50000-up' AND price IS NOT NULL AND record_type <> 'tick_size'
      ORDER BY seq) TO '${out}' (FORMAT csv, HEADER, COMPRESSION gzip)`;
    // A second baseline beside the first: the same query written as plain CSV. Most of DuckDB's
    // time is its gzip (miniz at level 6, which COPY cannot change), the route's zlib is at level 1:
    // this reading compares the rows without the compression.
    const plainOut = join(dir, 'duckdb.csv');
    const plainSql = sql.replace(`TO '${out}' (FORMAT csv, HEADER, COMPRESSION gzip)`, `TO '${plainOut}' (FORMAT csv, HEADER)`);
    const { url, proc } = await startServe(dir);
    const routeTimes: number[] = [];
    const duckTimes: number[] = [];
    const plainTimes: number[] = [];
    let route: { bytes: number; rows: number; s: number; rssIdle: number; rssMax: number };
    try {
      const fileUrl = `${url}/v1/pmtape-clob/incremental_book_L2/${y}/${m}/${d}/50000-UP.csv.gz`;
      const auth = { authorization: `Bearer ${key}` };
      const get = async (): Promise<Buffer[]> => {
        const res = await fetch(fileUrl, { headers: auth });
        if (res.status !== 200) throw new Error(`${fileUrl}: ${res.status} ${await res.text()}`);
        const parts: Buffer[] = [];
        for await (const c of res.body as unknown as AsyncIterable<Uint8Array>) parts.push(Buffer.from(c));
        return parts;
      };
      const warm = Buffer.concat(await get()); // warm-up: footers, page cache
      await conn.run(sql);
      await conn.run(plainSql);
      const rows = gunzipSync(warm).toString('utf8').split('\n').length - 2; // header and the last newline
      const rssIdle = rssBytes(proc.pid!);
      let rssMax = rssIdle;
      let bytes = 0;
      for (let r = 0; r < ROUNDS; r++) {
        log(`round ${r + 1}/${ROUNDS}: route, then DuckDB (CSV.gz, then plain CSV)`);
        const sampler = setInterval(() => (rssMax = Math.max(rssMax, rssBytes(proc.pid!))), 20);
        const t0 = performance.now();
        const parts = await get();
        routeTimes.push((performance.now() - t0) / 1000);
        clearInterval(sampler);
        bytes = parts.reduce((a, p) => a + p.length, 0);
        const d0 = performance.now();
        await conn.run(sql);
        duckTimes.push((performance.now() - d0) / 1000);
        const p0 = performance.now();
        await conn.run(plainSql);
        plainTimes.push((performance.now() - p0) / 1000);
      }
      route = { bytes, rows, s: median(routeTimes), rssIdle, rssMax };
    } finally {
      await stopServe(proc);
    }
    const duckS = median(duckTimes);
    const duckRows = gunzipSync(readFileSync(out)).toString('utf8').split('\n').length - 2;
    const duckBytes = statSync(out).size;
    const plainS = median(plainTimes);
    const plainRate = duckRows / plainS;
    conn.closeSync();
    db.closeSync();

    const routeRate = route.rows / route.s;
    const duckRate = duckRows / duckS;
    return {
      book_observations: booksPerDay,
      levels_per_side: levels,
      route_rows: route.rows,
      route_s: round(route.s, 3),
      route_rows_per_s: Math.round(routeRate),
      route_bytes: route.bytes,
      route_s_rounds: routeTimes.map((x) => round(x, 3)),
      duckdb_s_rounds: duckTimes.map((x) => round(x, 3)),
      duckdb_rows: duckRows,
      duckdb_s: round(duckS, 3),
      duckdb_rows_per_s: Math.round(duckRate),
      duckdb_bytes: duckBytes,
      route_vs_duckdb: round(routeRate / duckRate),
      duckdb_plain_csv_s_rounds: plainTimes.map((x) => round(x, 3)),
      duckdb_plain_csv_s: round(plainS, 3),
      duckdb_plain_csv_rows_per_s: Math.round(plainRate),
      duckdb_plain_csv_bytes: statSync(plainOut).size,
      route_vs_duckdb_plain_csv: round(routeRate / plainRate),
      load_average_1m: [round(loadStart), round(loadavg()[0])],
      rss_idle_mb: round(route.rssIdle / 2 ** 20, 1),
      rss_max_during_day_mb: round(route.rssMax / 2 ** 20, 1),
      rss_growth_mb: round((route.rssMax - route.rssIdle) / 2 ** 20, 1),
      targets: 'route_vs_duckdb >= 3; rss_growth_mb flat (<= 50); route_vs_duckdb_plain_csv is a second reading, no target',
      note: "route rows are the incremental_book_L2 rows of one outcome book downloaded whole by a local client (full books after another written as their difference), decoded on the helper thread; DuckDB rows are the same book's book_changes rows as they are (every full book whole). gzip: the route's level is TARDIS_GZIP_LEVEL (1); DuckDB's COPY has no level option and always compresses with miniz at its default level 6 (memLevel 1): compare the bytes, and read the ratio as the route's file against DuckDB's, not as equal compression work. The second baseline (duckdb_plain_csv_*) is the same query written uncompressed: the route (still gzip level 1) against DuckDB's rows without its compression",
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
