// Catalogue refresh benchmark (`npm run bench -- markets`): what `serve` pays every second a request
// needs the catalogue view, with many markets. A refresh stamps each market's catalog log (a listing
// and one stat) and reads only the changed ones (src/api/query/markets-index.ts). The baseline of
// the same run is a full refresh, reading every market's newest catalogue event, which is what
// every refresh did before stamps. PMTAPE_BENCH_MARKETS (default 2000) markets, one event each.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MarketsIndex } from '../../src/api/query/markets-index.js';
import type { CoinMarket } from '../../src/schema/market.js';
import { openWriter } from '../../src/storage/index.js';

const log = (s: string): void => void process.stderr.write(`bench markets: ${s}\n`);
const round = (x: number, d = 1): number => Math.round(x * 10 ** d) / 10 ** d;
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const market = (id: string, status: CoinMarket['status'] = 'open'): CoinMarket => ({
  family: 'coin', market_id: id, event_id: null, condition_id: `0x${id}`, slug: `btc-updown-15m-${id}`, question: 'Bench?',
  outcomes: [{ label: 'Up', token_id: `${id}-up` }, { label: 'Down', token_id: `${id}-down` }], coin: 'btc', window: '15m',
  start_time: null, end_time: null, created_time: null, updated_time: null, status, resolution: null,
  winning_outcome: null, resolved_time: null, volume: null, liquidity: null, native: {},
});

async function writeCatalog(dir: string, id: string, t: number, status?: CoinMarket['status']): Promise<void> {
  const w = await openWriter(dir, { family: 'coin', stream: 'catalog', market: id });
  await w.append({ type: 'catalog', event: status ? 'status' : 'listed', changed: status ? ['status'] : [], market: market(id, status), recv_ts: t, source_ts: null });
  await w.close();
}

/** One refresh: wall and CPU (main thread and the thread pool: process.cpuUsage counts both). */
async function timed(idx: MarketsIndex, full: boolean): Promise<{ wallMs: number; cpuMs: number; reads: number }> {
  const c0 = process.cpuUsage();
  const s = performance.now();
  await idx.rebuild('coin', full);
  const c = process.cpuUsage(c0);
  return { wallMs: performance.now() - s, cpuMs: (c.user + c.system) / 1000, reads: idx.lastReads };
}

export async function run(): Promise<Record<string, unknown>> {
  const n = Math.max(10, Number(process.env.PMTAPE_BENCH_MARKETS ?? 2000));
  const dir = mkdtempSync(join(tmpdir(), 'pmtape-bench-markets-'));
  try {
    log(`writing ${n} catalog logs`);
    const t0 = Date.now() - 3_600_000;
    const ids = Array.from({ length: n }, (_, k) => `m${k}`);
    for (let k = 0; k < n; k += 32) await Promise.all(ids.slice(k, k + 32).map((id, j) => writeCatalog(dir, id, t0 + k + j)));
    const idx = new MarketsIndex(dir);
    const first = await timed(idx, false);
    const full: number[] = [];
    const fullWall: number[] = [];
    const stamped: number[] = [];
    const stampedWall: number[] = [];
    let stampedReads = 0;
    // Alternating, so load from elsewhere on a shared machine hits both alike.
    for (let i = 0; i < 7; i++) {
      const f = await timed(idx, true);
      full.push(f.cpuMs);
      fullWall.push(f.wallMs);
      const s = await timed(idx, false);
      stamped.push(s.cpuMs);
      stampedWall.push(s.wallMs);
      stampedReads = Math.max(stampedReads, s.reads);
    }
    log('1 % of the markets change status');
    for (let k = 0; k < n; k += 100) await writeCatalog(dir, ids[k], t0 + 3_000_000 + k, 'closed');
    const changed = await timed(idx, false);
    return {
      markets: n,
      first_build_ms: round(first.wallMs),
      full_refresh_cpu_ms: round(median(full)),
      full_refresh_wall_ms: round(median(fullWall)),
      stamped_refresh_cpu_ms: round(median(stamped)),
      stamped_refresh_wall_ms: round(median(stampedWall)),
      stamped_refresh_markets_read: stampedReads,
      stamped_vs_full_cpu: round(median(stamped) / median(full), 3),
      refresh_after_1pct_changed_cpu_ms: round(changed.cpuMs),
      refresh_after_1pct_changed_markets_read: changed.reads,
      cpu_us_per_market_stamped: round((median(stamped) * 1000) / n),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
