// `npm run bench -- coverage`: what one page of `GET /v3/coverage?family=coin&limit=1000` costs the
// server in CPU, against a page of the markets list of the same run (`/v3/btc/markets?limit=1000`,
// the same markets from the catalogue view), on a real `pmtape serve` (a child process whose CPU
// is read from /proc, main thread and thread pool alike). PMTAPE_BENCH_COVERAGE_MARKETS markets
// (default 2200), each with a catalogue event and a short books log written today: every market
// counts as live, the worst case for the coverage cache's re-stamping (src/api/query/coverage.ts).
// Figures: the cold first page (every span read from its log once), warm pages back to back, pages
// 1.1 s apart (every live log re-stamped), and 20 pages in parallel from one key (how many the
// per-key limit on expensive requests answered 429). Target: a warm or re-stamped page ≤ 50 ms.
// Then the history case (`history`): the same markets recorded on a closed day and compacted, a
// cold server's first page with the day's logs kept and again with them deleted, each against the
// warm pages of the same server, each with the coverage summaries and log censuses compaction
// wrote and without them (moved aside: the manifests' and per-log path), alternately
// (PMTAPE_BENCH_COVERAGE_ROUNDS rounds, default 3; medians).

import { readFileSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createKey } from '../../src/api/plugins/keys.js';
import type { CoinMarket } from '../../src/schema/market.js';
import { compactDay, openWriter } from '../../src/storage/index.js';
import { utcDay } from '../../src/schema/time.js';
import { startServe, stopServe } from './serve.js';
import { coinMarket } from '../fixtures/markets.js';

const log = (s: string): void => void process.stderr.write(`bench coverage: ${s}\n`);
const round = (x: number, d = 1): number => Math.round(x * 10 ** d) / 10 ** d;
const envNum = (name: string, dflt: number): number => {
  const v = Number(process.env[name]);
  return Number.isFinite(v) && v > 0 ? v : dflt;
};

const market = (id: string): CoinMarket =>
  coinMarket(id, { event_id: null, condition_id: `0x${id}`, slug: `btc-updown-15m-${id}`, question: 'Bench?', start_time: null });

async function writeMarket(dir: string, id: string, t0: number): Promise<void> {
  const c = await openWriter(dir, { family: 'coin', stream: 'catalog', market: id });
  await c.append({ type: 'catalog', event: 'listed', changed: [], market: market(id), recv_ts: t0, source_ts: null });
  await c.close();
  const b = await openWriter(dir, { family: 'coin', stream: 'books', market: id });
  await b.append({
    type: 'book',
    token_id: `${id}-up`,
    units: 'decimal',
    bids: [['0.40', '10']],
    asks: [['0.41', '10']],
    recv_ts: t0 + 1,
    source_ts: null,
  });
  for (let i = 0; i < 20; i++) {
    await b.append({
      type: 'book_delta',
      token_id: `${id}-up`,
      changes: [{ side: 'bid', price: '0.39', size: String(i + 1) }],
      recv_ts: t0 + 2 + i,
      source_ts: null,
    });
  }
  await b.close();
}

/** CPU seconds (user + system) of a process so far, in ms. */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10; // utime, stime in clock ticks of 10 ms
}

async function writeMarkets(root: string, M: number, t0: number): Promise<void> {
  for (let i = 0; i < M; i += 50) {
    await Promise.all(
      Array.from({ length: Math.min(50, M - i) }, (_, k) => writeMarket(root, `m${String(i + k).padStart(6, '0')}`, t0 + (i + k) * 100)),
    );
  }
}

/** A cold server's first coverage page and its warm pages after it (server CPU ms each). */
async function coldAndWarm(root: string, key: string, pages: number): Promise<{ cold: number; warm: number; cold_vs_warm: number }> {
  const s = await startServe(root);
  try {
    const pid = s.proc.pid!;
    const one = async (): Promise<number> => {
      const c0 = cpuMs(pid);
      const res = await fetch(`${s.url}/v3/coverage?family=coin&limit=1000`, { headers: { authorization: `Bearer ${key}` } });
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`coverage answered ${res.status}`);
      return cpuMs(pid) - c0;
    };
    const cold = await one();
    let warm = 0;
    for (let i = 0; i < pages; i++) warm += await one();
    warm /= pages;
    return { cold, warm: round(warm), cold_vs_warm: round(cold / Math.max(warm, 0.1), 1) };
  } finally {
    await stopServe(s.proc);
  }
}

type Side = { cold: number; warm: number; cold_vs_warm: number };
const ROUNDS = Math.round(envNum('PMTAPE_BENCH_COVERAGE_ROUNDS', 3));
/** Per field, the median of the rounds. */
function median(xs: Side[]): Side {
  const m = (k: keyof Side): number => [...xs.map((x) => x[k])].sort((p, q) => p - q)[Math.floor(xs.length / 2)];
  return { cold: m('cold'), warm: m('warm'), cold_vs_warm: m('cold_vs_warm') };
}

/** The history case: markets of a closed, compacted day (see the header). */
async function history(M: number, pages: number): Promise<Record<string, unknown>> {
  const root = mkdtempSync(join(tmpdir(), 'pmtape-bench-coverage-history-'));
  try {
    const day = utcDay(Date.now() - 2 * 86_400_000);
    log(`history: writing ${M} markets on ${day}`);
    await writeMarkets(root, M, Date.parse(`${day}T01:00:00.000Z`));
    log('history: compacting');
    await compactDay(root, day);
    const { key } = await createKey(root, 'paid', 'bench');
    // With the coverage summaries and log censuses compaction wrote, and without them (moved aside:
    // the path of trees compacted by older versions), alternately, ROUNDS times each.
    const on = join(root, '_coverage');
    const off = join(root, '_coverage.off');
    const alternate = async (): Promise<{ summary: Side; no_summary: Side; cold_no_summary_vs_summary: number }> => {
      const a: Side[] = [];
      const b: Side[] = [];
      for (let r = 0; r < ROUNDS; r++) {
        a.push(await coldAndWarm(root, key, pages));
        renameSync(on, off);
        b.push(await coldAndWarm(root, key, pages));
        renameSync(off, on);
      }
      const summary = median(a);
      const noSummary = median(b);
      return { summary, no_summary: noSummary, cold_no_summary_vs_summary: round(noSummary.cold / Math.max(summary.cold, 1), 2) };
    };
    const kept = await alternate();
    // The books logs retired (the catalogue's kept: the markets list is read from its logs).
    rmSync(join(root, 'logs', 'coin', 'books'), { recursive: true, force: true });
    const deleted = await alternate();
    log(
      `history: cold ${kept.summary.cold} ms with summaries, ${kept.no_summary.cold} ms without (logs kept); ` +
        `${deleted.summary.cold} / ${deleted.no_summary.cold} ms (logs deleted); warm ${kept.summary.warm} / ${deleted.summary.warm} ms`,
    );
    return { day, rounds: ROUNDS, logs_kept: kept, logs_deleted: deleted };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

export async function run(): Promise<Record<string, unknown>> {
  const M = Math.round(envNum('PMTAPE_BENCH_COVERAGE_MARKETS', 2200));
  const PAGES = Math.round(envNum('PMTAPE_BENCH_COVERAGE_PAGES', 20));
  const root = mkdtempSync(join(tmpdir(), 'pmtape-bench-coverage-'));
  let proc: Awaited<ReturnType<typeof startServe>>['proc'] | null = null;
  try {
    log(`writing ${M} markets`);
    await writeMarkets(root, M, Date.now() - 3_600_000);
    const { key } = await createKey(root, 'paid', 'bench');
    const headers = { authorization: `Bearer ${key}` };
    const s = await startServe(root);
    proc = s.proc;
    const pid = s.proc.pid!;
    const page = async (path: string): Promise<number> => {
      const res = await fetch(s.url + path, { headers });
      await res.arrayBuffer();
      return res.status;
    };
    const COVERAGE = '/v3/coverage?family=coin&limit=1000';
    const MARKETS = '/v3/btc/markets?limit=1000';
    /** Mean server CPU of `n` pages of `path`, `gapMs` apart. */
    const measure = async (path: string, n: number, gapMs = 0): Promise<number> => {
      let cpu = 0;
      for (let i = 0; i < n; i++) {
        if (gapMs > 0) await new Promise((r) => setTimeout(r, gapMs));
        const c0 = cpuMs(pid);
        const status = await page(path);
        cpu += cpuMs(pid) - c0;
        if (status !== 200) throw new Error(`${path} answered ${status}`);
      }
      return cpu / n;
    };
    const coldCoverage = await measure(COVERAGE, 1);
    await measure(MARKETS, 3); // warm-up of the markets page's own code
    const markets = await measure(MARKETS, PAGES);
    const warm = await measure(COVERAGE, PAGES);
    const restamped = await measure(COVERAGE, Math.max(3, Math.round(PAGES / 2)), 1100);
    log(`cold ${coldCoverage} ms, warm ${round(warm)} ms, re-stamped ${round(restamped)} ms, markets ${round(markets)} ms a page`);
    // 20 at once from one key: the per-key limit answers the rest 429 at once.
    const c0 = cpuMs(pid);
    const statuses = await Promise.all(Array.from({ length: 20 }, () => page(COVERAGE)));
    const parallelCpu = cpuMs(pid) - c0;
    await stopServe(s.proc);
    proc = null;
    const hist = await history(M, PAGES);
    return {
      markets: M,
      pages: PAGES,
      cpu_ms_per_page: {
        coverage_cold_first: coldCoverage,
        coverage_warm: round(warm),
        coverage_restamped: round(restamped),
        markets_list: round(markets),
      },
      coverage_cold_vs_warm: round(coldCoverage / Math.max(warm, 0.1), 1),
      coverage_warm_vs_markets: round(warm / Math.max(markets, 0.1), 2),
      coverage_restamped_vs_markets: round(restamped / Math.max(markets, 0.1), 2),
      parallel_20_one_key: {
        ok: statuses.filter((x) => x === 200).length,
        limited_429: statuses.filter((x) => x === 429).length,
        cpu_ms: parallelCpu,
      },
      history: hist,
      cpu_clock_resolution_ms: 10,
      targets: { coverage_page_cpu_ms_max: 50 },
    };
  } finally {
    if (proc) await stopServe(proc);
    rmSync(root, { recursive: true, force: true });
  }
}
