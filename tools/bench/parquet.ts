// `npm run bench -- parquet`: compaction throughput (rows/s); bytes per book in Parquet vs the raw
// log vs a Tardis-style book_snapshot_25 CSV.gz of the same books; and a 1-hour range of one
// market on a compacted day served by pmtape's reader vs the same rows selected by DuckDB.

import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { DuckDBInstance } from '@duckdb/node-api';
import { MarketBooks } from '../../src/book/book-state.js';
import { DAY_MS, dayStartMs, utcDay } from '../../src/schema/time.js';
import { compactDay, readLogDay } from '../../src/storage/parquet/compaction.js';
import { openReader } from '../../src/storage/index.js';
import { parquetStore } from '../../src/storage/parquet/reader.js';
import { deleteExpiredLogs } from '../../src/storage/parquet/retention.js';
import { listMarkets, marketDir } from '../../src/storage/paths.js';
import { writeFixture } from '../../test/storage/compaction-fixture.js';

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const round = (x: number, d = 2): number => Math.round(x * 10 ** d) / 10 ** d;
const log = (s: string): void => void process.stderr.write(`bench parquet: ${s}\n`);

async function dirBytes(dir: string, suffix: string): Promise<number> {
  let total = 0;
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile() && e.name.endsWith(suffix)) total += (await stat(join(e.parentPath, e.name))).size;
  }
  return total;
}

/** Tardis `book_snapshot_25` CSV of the same books: one line per book observation, 25 levels. */
async function tardisCsv(dataDir: string, day: string): Promise<{ gz: number; books: number }> {
  const levels = 25;
  const head = ['exchange', 'symbol', 'timestamp', 'local_timestamp'];
  for (let i = 0; i < levels; i++) head.push(`asks[${i}].price`, `asks[${i}].amount`, `bids[${i}].price`, `bids[${i}].amount`);
  const lines = [head.join(',')];
  for (const market of await listMarkets(dataDir, 'coin', 'books')) {
    const books = new MarketBooks();
    for await (const { rec } of readLogDay(dataDir, { family: 'coin', stream: 'books', market }, day)) {
      books.apply(rec);
      if ((rec.type !== 'book' && rec.type !== 'book_delta') || !books.view(rec.token_id)) continue;
      const v = books.view(rec.token_id)!;
      const row = ['clob', rec.token_id, String(Math.round((rec.source_ts ?? rec.recv_ts) * 1000)), String(Math.round(rec.recv_ts * 1000))];
      for (let i = 0; i < levels; i++) row.push(v.asks[i]?.[0] ?? '', v.asks[i]?.[1] ?? '', v.bids[i]?.[0] ?? '', v.bids[i]?.[1] ?? '');
      lines.push(row.join(','));
    }
  }
  return { gz: gzipSync(lines.join('\n') + '\n').length, books: lines.length - 1 };
}

export async function run(): Promise<Record<string, unknown>> {
  const dir = await mkdtemp(join(tmpdir(), 'pmtape-bench-parquet-'));
  try {
    const day = utcDay(Date.now() - 2 * DAY_MS);
    const booksPerDay = Number(process.env.PMTAPE_BENCH_BOOKS ?? 20_000);
    log(`writing logs: 4 coin markets + 1 wallet market × ${booksPerDay} book observations`);
    await writeFixture(dir, { days: [day], booksPerDay, coinMarkets: 4 });
    const logBytes = await dirBytes(join(dir, 'logs', 'coin', 'books'), '.log');

    log('compacting');
    const t0 = performance.now();
    const u0 = process.cpuUsage();
    const results = await compactDay(dir, day);
    const compactS = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(u0);
    const compactCpuS = (cpu.user + cpu.system) / 1e6;
    const rows = results.reduce((a, r) => a + r.rows, 0);
    const coinBooks = results.find((r) => r.family === 'coin' && r.dataset === 'book_changes')!;

    log('building the Tardis-style CSV.gz of the same books');
    const csv = await tardisCsv(dir, day);

    await deleteExpiredLogs(dir, Date.now(), 0); // serve the day from Parquet only
    const market = '50001';
    const from = dayStartMs(day)! + 9 * 3_600_000;
    const to = from + 3_600_000;
    const reader = openReader(dir, { family: 'coin', stream: 'books', market });
    const store = parquetStore(dir);
    const pmtape = async (): Promise<number> => {
      let n = 0;
      const p = await reader.seekTime(from);
      if (p) for await (const _ of reader.read(p, { endTime: to })) n++;
      return n;
    };
    store.close();
    const c0 = performance.now();
    const hourRows = await pmtape();
    const coldMs = performance.now() - c0;
    const warm: number[] = [];
    for (let i = 0; i < 15; i++) {
      const s = performance.now();
      await pmtape();
      warm.push(performance.now() - s);
    }

    const db = await DuckDBInstance.create(':memory:');
    const conn = await db.connect();
    const file = join(dir, 'parquet', 'family=coin', 'dataset=book_changes', `date=${day}`, `book_changes-${day}.parquet`);
    const sql = `SELECT * FROM read_parquet('${file}') WHERE market_id = '${market}' AND receive_time >= epoch_ms(${from}) AND receive_time < epoch_ms(${to}) ORDER BY seq`;
    let duckRows = 0;
    const duck: number[] = [];
    for (let i = 0; i < 16; i++) {
      const s = performance.now();
      const r = await conn.runAndReadAll(sql);
      duckRows = r.getRows().length;
      if (i > 0) duck.push(performance.now() - s); // the first run warms DuckDB too
    }
    conn.closeSync();
    db.closeSync();
    if (duckRows !== hourRows) throw new Error(`pmtape served ${hourRows} rows, DuckDB selected ${duckRows}`);

    return {
      rows_compacted: rows,
      compaction_rows_per_s: Math.round(rows / compactS),
      compaction_s: round(compactS),
      // CPU time is the steadier figure on a shared machine (wall time includes waiting for a core).
      compaction_rows_per_cpu_s: Math.round(rows / compactCpuS),
      coin_books: coinBooks.rows,
      bytes_per_book_parquet: round(coinBooks.bytes / coinBooks.rows),
      bytes_per_book_raw_log: round(logBytes / coinBooks.rows),
      bytes_per_book_tardis_csv_gz: round(csv.gz / csv.books),
      parquet_vs_log: round(coinBooks.bytes / logBytes, 3),
      parquet_vs_tardis_csv_gz: round(coinBooks.bytes / csv.gz, 3),
      hour_range_rows: hourRows,
      hour_range_pmtape_cold_ms: round(coldMs),
      hour_range_pmtape_warm_ms: round(median(warm), 3),
      hour_range_duckdb_ms: round(median(duck), 3),
      pmtape_speedup_vs_duckdb_warm: round(median(duck) / median(warm)),
      pmtape_speedup_vs_duckdb_cold: round(median(duck) / coldMs),
      target: 'pmtape_speedup_vs_duckdb_warm >= 3',
      decoded_row_group_cache_bytes: store.cachedBytes,
      note: `market dir ${marketDir(dir, { family: 'coin', stream: 'books', market }).slice(dir.length)} served from Parquet after its log was deleted`,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
