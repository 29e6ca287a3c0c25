// Catalogue refresh benchmark (`npm run bench -- markets`): what `serve` pays every second a request
// needs the catalogue view, with many markets. A refresh looks only at the markets its folder
// watches reported and the ones due for their periodic check (src/api/query/markets-index.ts). The
// baselines of the same run: stamping every market's catalog log (what every refresh did before
// watches) and reading every market's newest event (before stamps). PMTAPE_BENCH_MARKETS (default
// 2000) markets, one event each, first captured evenly over the last 14 days (as coin windows are):
// those of the last two UTC days are watched, the others checked every RECHECK_MS.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MarketsIndex, RECHECK_MS, type RefreshMode } from '../../src/api/query/markets-index.js';
import type { CoinMarket } from '../../src/schema/market.js';
import { openWriter } from '../../src/storage/index.js';
import { coinMarket } from '../fixtures/markets.js';

const log = (s: string): void => void process.stderr.write(`bench markets: ${s}\n`);
const round = (x: number, d = 1): number => Math.round(x * 10 ** d) / 10 ** d;
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const market = (id: string, status: CoinMarket['status'] = 'open'): CoinMarket =>
  coinMarket(id, { event_id: null, condition_id: `0x${id}`, slug: `btc-updown-15m-${id}`, question: 'Bench?', start_time: null, status });

async function writeCatalog(dir: string, id: string, t: number, status?: CoinMarket['status']): Promise<void> {
  const w = await openWriter(dir, { family: 'coin', stream: 'catalog', market: id });
  await w.append({
    type: 'catalog',
    event: status ? 'status' : 'listed',
    changed: status ? ['status'] : [],
    market: market(id, status),
    recv_ts: t,
    source_ts: null,
  });
  await w.close();
}

/** One refresh: wall and CPU (main thread and the thread pool: process.cpuUsage counts both). */
async function timed(idx: MarketsIndex, mode: RefreshMode): Promise<{ wallMs: number; cpuMs: number; reads: number; stamps: number }> {
  const c0 = process.cpuUsage();
  const s = performance.now();
  await idx.rebuild('coin', mode);
  const c = process.cpuUsage(c0);
  return { wallMs: performance.now() - s, cpuMs: (c.user + c.system) / 1000, reads: idx.lastReads, stamps: idx.lastStamps };
}

export async function run(): Promise<Record<string, unknown>> {
  const n = Math.max(10, Number(process.env.PMTAPE_BENCH_MARKETS ?? 2000));
  const dir = mkdtempSync(join(tmpdir(), 'pmtape-bench-markets-'));
  try {
    log(`writing ${n} catalog logs`);
    const span = 14 * 86_400_000;
    const t0 = Date.now() - span;
    const ids = Array.from({ length: n }, (_, k) => `m${k}`);
    for (let k = 0; k < n; k += 32)
      await Promise.all(ids.slice(k, k + 32).map((id, j) => writeCatalog(dir, id, Math.round(t0 + ((k + j) * (span - 3_600_000)) / n))));
    let clock = Date.now();
    const idx = new MarketsIndex(dir, 1000, () => clock);
    const first = await timed(idx, 'changed');
    const cpu: Record<RefreshMode, number[]> = { changed: [], stamp: [], read: [] };
    const wall: Record<RefreshMode, number[]> = { changed: [], stamp: [], read: [] };
    let changedStamps = 0;
    let changedReads = 0;
    // Alternating, so load from elsewhere on a shared machine hits all alike. The baselines leave
    // the view as it was (nothing changed), so each `changed` refresh meets the steady state.
    for (let i = 0; i < 7; i++) {
      for (const mode of ['read', 'stamp', 'changed'] as const) {
        const r = await timed(idx, mode);
        cpu[mode].push(r.cpuMs);
        wall[mode].push(r.wallMs);
        if (mode === 'changed') {
          changedStamps = Math.max(changedStamps, r.stamps);
          changedReads = Math.max(changedReads, r.reads);
        }
      }
    }
    log('1 % of the markets change status');
    for (let k = 0; k < n; k += 100) await writeCatalog(dir, ids[k], Date.now() + k, 'closed');
    await new Promise((r) => setTimeout(r, 200)); // the folder watches' notices arrive
    const changed = await timed(idx, 'changed');
    // Every unwatched market's periodic check at once (the clock moved past RECHECK_MS): the burst
    // a refresh pays when many checks fall due together; under load they spread over RECHECK_MS.
    clock += RECHECK_MS;
    const due = await timed(idx, 'changed');
    const perStampUs = (median(cpu.stamp) * 1000) / n;
    return {
      markets: n,
      watched_markets: idx.watched,
      first_build_ms: round(first.wallMs),
      refresh_cpu_ms: round(median(cpu.changed), 2),
      refresh_wall_ms: round(median(wall.changed), 2),
      refresh_markets_stamped: changedStamps,
      refresh_markets_read: changedReads,
      stamp_all_refresh_cpu_ms: round(median(cpu.stamp)),
      stamp_all_refresh_wall_ms: round(median(wall.stamp)),
      read_all_refresh_cpu_ms: round(median(cpu.read)),
      read_all_refresh_wall_ms: round(median(wall.read)),
      refresh_vs_stamp_all_cpu: round(median(cpu.changed) / median(cpu.stamp), 3),
      refresh_vs_read_all_cpu: round(median(cpu.changed) / median(cpu.read), 3),
      refresh_after_1pct_changed_cpu_ms: round(changed.cpuMs, 2),
      // Read at once: the changed markets that were watched (those of the last two days).
      refresh_after_1pct_changed_markets_read: changed.reads,
      all_checks_due_refresh_cpu_ms: round(due.cpuMs),
      all_checks_due_markets_stamped: due.stamps,
      // The changed markets not watched (quiet for two days before): read at their check.
      all_checks_due_markets_read: due.reads,
      // The periodic checks spread over RECHECK_MS under load: their CPU per second of it.
      periodic_checks_cpu_ms_per_s: round((perStampUs * n) / RECHECK_MS, 2),
      cpu_us_per_market_stamped: round(perStampUs),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
