// `npm run bench -- parquet`: schema-version-2 datasets on a day of deep books (≥ 40 levels a side):
// book_changes bytes per level change vs a gzipped Tardis-style incremental_book_L2 CSV of the same
// rows, the whole v2 day vs the v1 layout of the same logs, compaction throughput in book_changes
// rows/s, and a 1-hour range of one market served by pmtape's reader (cold and warm) vs DuckDB.

import { execFile } from 'node:child_process';
import { cp, mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { DuckDBInstance } from '@duckdb/node-api';
import { tableFromIPC } from 'apache-arrow';
import { MarketBooks } from '../../src/book/book-state.js';
import type { Ladder } from '../../src/schema/observation.js';
import { DAY_MS, dayStartMs, utcDay } from '../../src/schema/time.js';
import {
  compactDay,
  deleteExpiredLogs,
  encodeParquet,
  listMarkets,
  openReader,
  parquetStore,
  readLogDay,
  type ColumnSpec,
} from '../../src/storage/testing.js';
import { FAMILIES } from '../../src/schema/observation.js';
import { writeFixture } from '../fixtures/compaction-logs.js';
import { createKey } from '../../src/api/plugins/keys.js';
import { startServe, stopServe } from './serve.js';

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const minorFaults = (): number => process.resourceUsage().minorPageFault;

/**
 * What first touching a fresh page of memory costs on this machine, in µs: 128 MB of new typed
 * arrays written once. Compaction allocates hundreds of MB of short-lived buffers (row columns, Arrow
 * buffers, the IPC stream); on a VM where a fault costs 10-15 µs instead of about 1, that alone is a
 * third of the run, so the bench reports the faults beside the throughput.
 */
function pageFaultUs(): number {
  const f0 = minorFaults();
  const t0 = performance.now();
  let sink = 0;
  for (let k = 0; k < 4; k++) {
    const a = new Float64Array(4 * 1024 * 1024);
    for (let i = 0; i < a.length; i += 512) a[i] = i;
    sink += a[512];
  }
  const faults = minorFaults() - f0;
  return sink >= 0 && faults > 0 ? ((performance.now() - t0) * 1000) / faults : 0;
}
const round = (x: number, d = 2): number => Math.round(x * 10 ** d) / 10 ** d;
const log = (s: string): void => void process.stderr.write(`bench parquet: ${s}\n`);

async function dirBytes(dir: string, suffix: string): Promise<number> {
  let total = 0;
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile() && e.name.endsWith(suffix)) total += (await stat(join(e.parentPath, e.name))).size;
  }
  return total;
}

/**
 * Tardis `incremental_book_L2` CSV of the same level changes (coin books): one line per level,
 * full books as is_snapshot lines, gzipped as Tardis serves it.
 */
async function tardisCsv(dataDir: string, day: string): Promise<{ gz: number; lines: number }> {
  const lines = ['exchange,symbol,timestamp,local_timestamp,is_snapshot,side,price,amount'];
  const us = (ms: number): string => String(Math.round(ms * 1000));
  for (const market of await listMarkets(dataDir, 'coin', 'books')) {
    for await (const { rec } of readLogDay(dataDir, { family: 'coin', stream: 'books', market }, day)) {
      const head = (tok: string): string => `clob,${tok},${us(rec.source_ts ?? rec.recv_ts)},${us(rec.recv_ts)}`;
      const full = (tok: string, bids: Ladder, asks: Ladder): void => {
        for (const [p, q] of bids) lines.push(`${head(tok)},true,bid,${p},${q}`);
        for (const [p, q] of asks) lines.push(`${head(tok)},true,ask,${p},${q}`);
      };
      if (rec.type === 'book') full(rec.token_id, rec.bids, rec.asks);
      else if (rec.type === 'book_checkpoint') for (const b of rec.books) full(b.token_id, b.bids, b.asks);
      else if (rec.type === 'book_delta')
        for (const c of rec.changes) lines.push(`${head(rec.token_id)},false,${c.side},${c.price},${c.size}`);
    }
  }
  return { gz: gzipSync(lines.join('\n') + '\n').length, lines: lines.length - 1 };
}

const v1 = (name: string, kind: ColumnSpec['kind'], nullable = true): ColumnSpec => ({ name, kind, nullable, doc: '' });
/** Schema version 1's books columns: the whole book after every record in lists, plus the record as JSON. */
const V1_BOOKS: ColumnSpec[] = [
  v1('market_id', 'utf8', false),
  v1('receive_time', 'ts', false),
  v1('source_time', 'ts'),
  v1('seq', 'int64', false),
  v1('type', 'utf8', false),
  v1('token_id', 'utf8'),
  v1('bid_prices', 'list_f64'),
  v1('bid_sizes', 'list_f64'),
  v1('ask_prices', 'list_f64'),
  v1('ask_sizes', 'list_f64'),
  v1('best_bid_price', 'f64'),
  v1('best_ask_price', 'f64'),
  v1('record', 'utf8', false),
  v1('checkpoint', 'bool', false),
];

/** Bytes the v1 layout takes for the same logs (books of every family; metrics/catalog/gaps as v2 ± the record column). */
async function v1Bytes(dataDir: string, day: string): Promise<number> {
  let total = 0;
  for (const family of FAMILIES) {
    const rows: Record<string, unknown>[] = [];
    for (const market of await listMarkets(dataDir, family, 'books')) {
      const books = new MarketBooks();
      for await (const { rec, checkpoint } of readLogDay(dataDir, { family, stream: 'books', market }, day)) {
        books.apply(rec);
        const tok = 'token_id' in rec ? (rec.token_id ?? null) : null;
        const v = (rec.type === 'book' || rec.type === 'book_delta') && tok ? books.view(tok) : null;
        rows.push({
          market_id: market,
          receive_time: rec.recv_ts,
          source_time: rec.source_ts,
          seq: rec.seq,
          type: rec.type,
          token_id: tok,
          bid_prices: v?.bids.map((l) => Number(l[0])) ?? null,
          bid_sizes: v?.bids.map((l) => Number(l[1])) ?? null,
          ask_prices: v?.asks.map((l) => Number(l[0])) ?? null,
          ask_sizes: v?.asks.map((l) => Number(l[1])) ?? null,
          best_bid_price: v?.bids[0] ? Number(v.bids[0][0]) : null,
          best_ask_price: v?.asks[0] ? Number(v.asks[0][0]) : null,
          record: JSON.stringify(rec),
          checkpoint,
        });
      }
    }
    if (rows.length)
      total += encodeParquet(V1_BOOKS, V1_BOOKS.map((c) => rows.map((r) => r[c.name] ?? null)) as never, {
        rowGroupRows: 2048,
        metadata: new Map(),
      }).length;
  }
  return total;
}

/**
 * One GET timed by curl (a C client: its time is the server's answer, with no client JIT in it),
 * or null when curl is not installed.
 */
async function curlGet(url: string, key: string): Promise<{ body: Buffer; ms: number } | null> {
  return new Promise((resolve, reject) => {
    execFile(
      'curl',
      ['-sS', '--fail', '-H', `authorization: Bearer ${key}`, '-w', '\n%{time_total}', url],
      { maxBuffer: 256 << 20, encoding: 'buffer' },
      (err, out) => {
        if (err) return err.code === 'ENOENT' ? resolve(null) : reject(new Error(`curl ${url}: ${err.message}`, { cause: err }));
        const cut = out.lastIndexOf(10);
        resolve({ body: out.subarray(0, cut), ms: Number(out.subarray(cut + 1).toString()) * 1000 });
      },
    );
  });
}

/** Lines of an NDJSON body, or rows of an Arrow IPC stream. */
function unitsOf(body: Buffer, route: 'replay' | 'rows'): number {
  if (route === 'rows') return tableFromIPC(body).numRows;
  let lines = 0;
  for (let i = 0; i < body.length; i++) if (body[i] === 10) lines++;
  return lines;
}

/**
 * The hour served by the API, as the issue asks, two ways: `GET /v3/replay?types=book_change` (one
 * NDJSON line per record with its level changes) and `GET /v3/datasets/rows` (the `book_changes`
 * rows themselves as one Arrow IPC stream: what DuckDB selects), each from a `serve` started on the
 * compacted day. Cold: the first data request after the server said ready (before that, the server decoded
 * and replayed the first hour of another market, 00:00 of the first one, to warm its code, and kept
 * nothing of it: see src/storage/compaction/warm-up.ts and src/api/replay/warm-up.ts). Warm: the
 * median of 15 after 20 more (the JIT past its first tiers). Another market: the first request for
 * a second market's hour afterwards (its part file not opened yet, the code warm).
 *
 * Timed with curl when installed: a Node client's own first read of a large streamed body (its
 * fetch and stream code running for the first time) added 20 – 40 ms to the cold figure here,
 * which is the client's cost, not the server's. Without curl, fetch (then `client` says so).
 */
async function apiHour(
  dir: string,
  markets: readonly string[],
  from: number,
  to: number,
  route: 'replay' | 'rows',
): Promise<{ lines: number; bytes: number; coldMs: number; warmMs: number; otherMarketMs: number; client: string }> {
  const key = (await createKey(dir, 'paid', 'bench')).key;
  const { url, proc } = await startServe(dir);
  const hourUrl = (market: string): string =>
    route === 'replay'
      ? `${url}/v3/replay?family=coin&market_id=${market}&start_time=${from}&end_time=${to}&types=book_change`
      : `${url}/v3/datasets/rows?family=coin&dataset=book_changes&market_id=${market}&start_time=${from}&end_time=${to}`;
  const viaFetch = async (market: string): Promise<{ body: Buffer; ms: number }> => {
    const s = performance.now();
    const res = await fetch(hourUrl(market), { headers: { authorization: `Bearer ${key}` } });
    if (!res.ok) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
    const body = Buffer.from(await res.arrayBuffer());
    return { body, ms: performance.now() - s };
  };
  try {
    // Either client's first request is paid on a route that reads no data (Node loads its fetch
    // implementation on first use: 70 – 90 ms here; curl resolves and connects).
    await (await fetch(`${url}/healthz`)).arrayBuffer();
    const curl = await curlGet(`${url}/healthz`, key);
    const get = async (market: string): Promise<{ body: Buffer; ms: number }> =>
      curl ? (await curlGet(hourUrl(market), key))! : await viaFetch(market);
    const cold = await get(markets[0]);
    for (let i = 0; i < 20; i++) await get(markets[0]); // past the JIT's first tiers
    const warm: number[] = [];
    for (let i = 0; i < 15; i++) warm.push((await get(markets[0])).ms);
    const other = await get(markets[1]);
    // Replay: minus the end line.
    const units = unitsOf(cold.body, route) - (route === 'replay' ? 1 : 0);
    return {
      lines: units,
      bytes: cold.body.length,
      coldMs: cold.ms,
      warmMs: median(warm),
      otherMarketMs: other.ms,
      client: curl ? 'curl' : 'fetch',
    };
  } finally {
    await stopServe(proc);
  }
}

/** One API route's hour figures, and its speedups over DuckDB's cold and warm queries. */
function apiFigures(
  p: string,
  r: { coldMs: number; warmMs: number; otherMarketMs: number },
  duckCold: number,
  duckWarm: number,
): Record<string, number> {
  return {
    [`${p}_hour_cold_ms`]: round(r.coldMs),
    [`${p}_hour_warm_ms`]: round(r.warmMs),
    [`${p}_hour_other_market_ms`]: round(r.otherMarketMs),
    [`${p}_speedup_vs_duckdb_cold`]: round(duckCold / r.coldMs),
    [`${p}_other_market_speedup_vs_duckdb_cold`]: round(duckCold / r.otherMarketMs),
    [`${p}_speedup_vs_duckdb_warm`]: round(duckWarm / r.warmMs),
  };
}

export async function run(): Promise<Record<string, unknown>> {
  const dir = await mkdtemp(join(tmpdir(), 'pmtape-bench-parquet-'));
  try {
    const day = utcDay(Date.now() - 2 * DAY_MS);
    const booksPerDay = Number(process.env.PMTAPE_BENCH_BOOKS ?? 20_000);
    const levels = Number(process.env.PMTAPE_BENCH_LEVELS ?? 50);
    log(
      `writing logs: 4 coin markets (books of both outcomes) + 1 wallet market × ${booksPerDay} book observations, ${levels} levels a side`,
    );
    await writeFixture(dir, { days: [day], booksPerDay, coinMarkets: 4, levels, bothOutcomes: true });
    const logBytes = await dirBytes(join(dir, 'logs'), '.log');
    log('v1 layout of the same logs');
    const v1Books = await v1Bytes(dir, day);

    log('compacting (two threads, the default)');
    const faultUs = pageFaultUs();
    const f0 = minorFaults();
    const t0 = performance.now();
    const u0 = process.cpuUsage();
    const results = await compactDay(dir, day);
    const compactS = (performance.now() - t0) / 1000;
    const compactFaults = minorFaults() - f0;
    const cpu = process.cpuUsage(u0);
    const compactCpuS = (cpu.user + cpu.system) / 1e6;

    // The baseline of the same run: the same logs compacted again by one thread (storage.compaction_threads
    // 1). It runs second, on code the first compaction warmed up (5 – 8 % faster than a first run here),
    // so the speedup printed is the conservative one.
    log('compacting a copy with one thread');
    const single = await mkdtemp(join(tmpdir(), 'pmtape-bench-parquet-1t-'));
    let singleS: number;
    try {
      await cp(join(dir, 'logs'), join(single, 'logs'), { recursive: true });
      const s0 = performance.now();
      await compactDay(single, day, { threads: 1 });
      singleS = (performance.now() - s0) / 1000;
    } finally {
      await rm(single, { recursive: true, force: true });
    }

    const changes = results.filter((r) => r.dataset === 'book_changes').reduce((a, r) => a + r.rows, 0);
    const coinChanges = results.find((r) => r.family === 'coin' && r.dataset === 'book_changes')!;
    const v2Day = results.reduce((a, r) => a + r.bytes, 0);
    const snapshots = results.filter((r) => r.dataset === 'book_snapshots');
    const v2Books = results
      .filter((r) => r.dataset === 'book_changes' || r.dataset === 'trades' || r.dataset === 'gaps')
      .reduce((a, r) => a + r.bytes, 0);

    log('building the Tardis-style incremental_book_L2 CSV.gz of the same rows');
    const csv = await tardisCsv(dir, day);

    await deleteExpiredLogs(dir, Date.now(), 0); // serve the day from Parquet only
    const market = '50001';
    const from = dayStartMs(day)! + 9 * 3_600_000;
    const to = from + 3_600_000;
    const store = parquetStore(dir);
    const pmtape = async (): Promise<{ records: number; levels: number }> => {
      const reader = openReader(dir, { family: 'coin', stream: 'books', market });
      let records = 0;
      let lv = 0;
      const p = await reader.seekTime(from);
      if (p) {
        for await (const { rec } of reader.read(p, { endTime: to })) {
          records++;
          if (rec.type === 'book') lv += rec.bids.length + rec.asks.length;
          else if (rec.type === 'book_delta') lv += rec.changes.length;
          else if (rec.type === 'book_checkpoint') for (const b of rec.books) lv += b.bids.length + b.asks.length;
        }
      }
      return { records, levels: lv };
    };
    store.close();
    const c0 = performance.now();
    const hour = await pmtape();
    const coldMs = performance.now() - c0;
    const warm: number[] = [];
    for (let i = 0; i < 15; i++) {
      const s = performance.now();
      await pmtape();
      warm.push(performance.now() - s);
    }
    // Cold data in a warm process, as a running `serve` meets a day nobody has read since it
    // started: the store is closed before each read (no open file, no decoded group), and the code
    // has run before. The median of the last five of ten.
    const coldData: number[] = [];
    for (let i = 0; i < 10; i++) {
      store.close();
      const s = performance.now();
      await pmtape();
      coldData.push(performance.now() - s);
    }
    const coldDataMs = median(coldData.slice(5));

    const glob = join(dir, 'parquet', 'family=coin', 'dataset=book_changes', '**', '*.parquet');
    const sql = `SELECT * FROM read_parquet('${glob}', hive_partitioning = true) WHERE market_id = '${market}' AND receive_time >= epoch_ms(${from}) AND receive_time < epoch_ms(${to}) ORDER BY seq`;
    let duckRows = 0;
    const duck: number[] = [];
    // Cold: the first query of a fresh instance, five instances (the median); warm: one instance again.
    const duckColds: number[] = [];
    for (let k = 0; k < 5; k++) {
      const db = await DuckDBInstance.create(':memory:');
      const conn = await db.connect();
      for (let i = 0; i < (k === 4 ? 16 : 1); i++) {
        const s = performance.now();
        const r = await conn.runAndReadAll(sql);
        duckRows = r.getRows().length;
        if (i === 0) duckColds.push(performance.now() - s);
        else duck.push(performance.now() - s);
      }
      conn.closeSync();
      db.closeSync();
    }
    const duckCold = median(duckColds);
    if (duckRows !== hour.levels)
      log(`note: DuckDB selected ${duckRows} rows, pmtape rebuilt ${hour.levels} levels (empty-side and marker rows differ)`);
    log('the same hour through the API (a serve process)');
    store.close();
    const api = await apiHour(dir, [market, '50002'], from, to, 'replay');
    log('the same rows through GET /v3/datasets/rows (Arrow IPC, a fresh serve)');
    const rows = await apiHour(dir, [market, '50002'], from, to, 'rows');
    if (rows.lines !== duckRows) throw new Error(`/v3/datasets/rows served ${rows.lines} rows of the hour, DuckDB selected ${duckRows}`);

    return {
      caveat: 'a busy shared 2-core machine; books generated by the compaction fixture (not recorded from the emulators)',
      levels_a_side: levels,
      book_changes_rows: changes,
      book_changes_bytes_per_change: round(coinChanges.bytes / coinChanges.rows),
      tardis_csv_gz_bytes_per_change: round(csv.gz / csv.lines),
      book_changes_vs_tardis_csv_gz: round(coinChanges.bytes / csv.gz, 3),
      target_book_changes_vs_tardis_csv_gz: 0.5,
      v2_day_bytes: v2Day,
      v1_books_bytes: v1Books,
      v2_books_stream_vs_v1: round(v2Books / v1Books, 3),
      target_v2_vs_v1: 0.25,
      raw_log_bytes: logBytes,
      // Derived, not records: one row per valid second and book, 25 levels a side (in v2_day_bytes too).
      book_snapshots_rows: snapshots.reduce((a, r) => a + r.rows, 0),
      book_snapshots_bytes: snapshots.reduce((a, r) => a + r.bytes, 0),
      // Includes building book_snapshots (beside the record datasets, in a helper thread: the default).
      compaction_s: round(compactS),
      compaction_book_changes_rows_per_s: Math.round(changes / compactS),
      compaction_one_thread_s: round(singleS),
      compaction_one_thread_book_changes_rows_per_s: Math.round(changes / singleS),
      compaction_two_threads_speedup: round(singleS / compactS),
      // CPU time is the steadier figure on a shared machine (wall time includes waiting for a core).
      compaction_book_changes_rows_per_cpu_s: Math.round(changes / compactCpuS),
      target_rows_per_s: 150_000,
      // Fresh memory first touched during compaction, what a fault costs here (measured just before),
      // and the share of the wall time that makes.
      compaction_page_faults: compactFaults,
      page_fault_us: round(faultUs),
      compaction_s_in_page_faults: round((compactFaults * faultUs) / 1e6),
      compaction_page_fault_share: round((compactFaults * faultUs) / 1e6 / compactS),
      hour_range_records: hour.records,
      hour_range_levels: hour.levels,
      hour_range_duckdb_rows: duckRows,
      // First read in this process: the read path's code runs for the first time too.
      hour_range_pmtape_cold_ms: round(coldMs),
      hour_range_pmtape_cold_data_warm_process_ms: round(coldDataMs),
      hour_range_pmtape_warm_ms: round(median(warm), 3),
      hour_range_duckdb_cold_ms: round(duckCold, 3),
      hour_range_duckdb_warm_ms: round(median(duck), 3),
      pmtape_speedup_vs_duckdb_cold: round(duckCold / coldMs),
      pmtape_cold_data_warm_process_speedup_vs_duckdb_cold: round(duckCold / coldDataMs),
      pmtape_speedup_vs_duckdb_warm: round(median(duck) / median(warm)),
      // Through HTTP: /v3/replay?types=book_change lines (level changes) of the same hour.
      api_hour_book_change_lines: api.lines,
      api_client: api.client,
      ...apiFigures('api', api, duckCold, median(duck)),
      // The same rows DuckDB selects, as the API serves them to a researcher: GET /v3/datasets/rows
      // (one Arrow IPC stream, the dataset's columns), from a fresh serve as above.
      api_rows_hour_rows: rows.lines,
      api_rows_hour_bytes: rows.bytes,
      ...apiFigures('api_rows', rows, duckCold, median(duck)),
      target_speedup: 3,
      decoded_cache_bytes: store.cachedBytes,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
