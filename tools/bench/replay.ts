// `npm run bench -- replay`: one day of 10 coin markets, served by a real `serve` process, first
// from open logs, then from the compacted day (logs deleted). Prints replay lines per second to a
// local client vs paging the same books through /snapshots (limit=1000) vs DuckDB reading the same
// rows from the Parquet files, and the server's RSS during a whole-day replay against its idle RSS.

import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { countLines, startServe, stopServe } from './serve.js';
import { createKey } from '../../src/api/plugins/keys.js';
import { DAY_MS, dayStartMs, utcDay } from '../../src/schema/time.js';
import { compactDay, deleteExpiredLogs, openWriter } from '../../src/storage/index.js';
import { writeFixture } from '../fixtures/compaction-logs.js';
import { coinMarket } from '../fixtures/markets.js';

const round = (x: number, d = 2): number => Math.round(x * 10 ** d) / 10 ** d;
const log = (s: string): void => void process.stderr.write(`bench replay: ${s}\n`);
const MARKETS = 10;

function rssBytes(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : NaN;
}

interface Figures {
  replay_lines: number;
  replay_lines_per_s: number;
  snapshots_items: number;
  snapshots_items_per_s: number;
  replay_vs_snapshots: number;
  rss_fresh_mb: number;
  rss_idle_mb: number;
  rss_max_during_replay_mb: number;
  rss_growth_mb: number;
}

async function measure(dataDir: string, key: string, ids: string[], from: number, to: number): Promise<Figures> {
  const { url, proc } = await startServe(dataDir);
  const auth = { authorization: `Bearer ${key}` };
  try {
    const replayUrl = `${url}/v3/replay?family=coin&market_id=${ids.join(',')}&start_time=${from}&end_time=${to}&types=book`;
    const fresh = rssBytes(proc.pid!);
    await countLines(await fetch(replayUrl, { headers: auth })); // warm-up: indexes, page cache, decoded row groups
    const idle = rssBytes(proc.pid!);
    let maxRss = idle;
    const sampler = setInterval(() => (maxRss = Math.max(maxRss, rssBytes(proc.pid!))), 20);
    const r0 = performance.now();
    const lines = (await countLines(await fetch(replayUrl, { headers: auth }))) - 1; // minus the end line
    const replayS = (performance.now() - r0) / 1000;
    clearInterval(sampler);

    const s0 = performance.now();
    let items = 0;
    for (const id of ids) {
      const path = `/v3/btc/markets/${id}/snapshots?include_orderbook=true&limit=1000&start_time=${from}&end_time=${to}`;
      for (let cursor: string | null = null, first = true; first || cursor; first = false) {
        const page = (await (
          await fetch(url + path + (cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''), { headers: auth })
        ).json()) as { data: unknown[]; next_cursor: string | null };
        items += page.data.length;
        cursor = page.next_cursor;
      }
    }
    const snapS = (performance.now() - s0) / 1000;
    if (items !== lines) throw new Error(`replay gave ${lines} book lines, /snapshots ${items} snapshots`);
    return {
      replay_lines: lines,
      replay_lines_per_s: Math.round(lines / replayS),
      snapshots_items: items,
      snapshots_items_per_s: Math.round(items / snapS),
      replay_vs_snapshots: round(snapS / replayS),
      rss_fresh_mb: round(fresh / 2 ** 20, 1),
      rss_idle_mb: round(idle / 2 ** 20, 1),
      rss_max_during_replay_mb: round(maxRss / 2 ** 20, 1),
      rss_growth_mb: round((maxRss - idle) / 2 ** 20, 1),
    };
  } finally {
    await stopServe(proc);
  }
}

export async function run(): Promise<Record<string, unknown>> {
  const dir = await mkdtemp(join(tmpdir(), 'pmtape-bench-replay-'));
  try {
    const day = utcDay(Date.now() - 2 * DAY_MS);
    const booksPerDay = Number(process.env.PMTAPE_BENCH_BOOKS ?? 20_000);
    log(`writing logs: ${MARKETS} coin markets × ${booksPerDay} book observations on ${day}`);
    await writeFixture(dir, { days: [day], booksPerDay, coinMarkets: MARKETS });
    const ids = Array.from({ length: MARKETS }, (_, i) => `5000${i}`);
    // The fixture's catalogue entries are minimal: add full btc entries so /v3/btc/... routes find them.
    const t0 = dayStartMs(day)!;
    for (const id of ids) {
      const w = await openWriter(dir, { family: 'coin', stream: 'catalog', market: id });
      await w.append({
        type: 'catalog',
        recv_ts: t0 + 2000,
        source_ts: null,
        event: 'updated',
        changed: ['coin'],
        market: coinMarket(id, {
          event_id: null,
          condition_id: `0x${id}`,
          slug: null,
          question: `bench ${id}`,
          start_time: t0,
          end_time: t0 + DAY_MS,
          status: 'closed',
        }),
      });
      await w.close();
    }
    const key = (await createKey(dir, 'paid', 'bench')).key;
    const from = t0;
    const to = t0 + DAY_MS;

    log('open logs: replay, /snapshots paging, RSS');
    const logs = await measure(dir, key, ids, from, to);

    log('compacting the day and deleting its logs');
    await compactDay(dir, day);
    await deleteExpiredLogs(dir, Date.now(), 0);
    log('compacted day: replay, /snapshots paging, RSS');
    const parquet = await measure(dir, key, ids, from, to);

    log('DuckDB reading the same rows from the Parquet files');
    const db = await DuckDBInstance.create(':memory:');
    const conn = await db.connect();
    const sql = `SELECT * FROM read_parquet('${dir}/parquet/family=coin/dataset=book_changes/**/*.parquet', hive_partitioning=true)
      WHERE market_id IN (${ids.map((i) => `'${i}'`).join(',')}) ORDER BY receive_time, market_id, seq`;
    await conn.runAndReadAll(sql); // warm-up
    const d0 = performance.now();
    const rows = (await conn.runAndReadAll(sql)).getRows().length;
    const duckS = (performance.now() - d0) / 1000;
    conn.closeSync();
    db.closeSync();

    return {
      markets: MARKETS,
      book_observations_per_market: booksPerDay,
      open_logs: logs,
      compacted_day: parquet,
      duckdb_rows: rows,
      duckdb_rows_per_s: Math.round(rows / duckS),
      replay_vs_duckdb_compacted: round(parquet.replay_lines_per_s / (rows / duckS)),
      targets: 'replay_vs_snapshots >= 3; rss_growth_mb <= 50',
      note: "replay counts book lines (types=book, whole book per line) streamed to a local client; DuckDB rows are the markets' book_changes rows (one per level change of every book, delta and checkpoint) materialized in order; the ratio is lines/s over rows/s",
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
