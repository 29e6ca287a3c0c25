// The yes/no part of `npm run bench -- recorder`: (1) 100-level yes/no order-book bodies parsed,
// normalized and appended (checkpoint, fsynced) per second, against appending the same raw bytes to
// a plain file in the same run; (2) yes/no books per second actually recorded from the emulator
// inside a 10 req/s budget (the adaptive cadence's yield), with the interval it recorded.

import { mkdtempSync, openSync, writeSync, fsyncSync, closeSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config.js';
import { LogSink } from '../../src/recorders/sink.js';
import { silentLogger, type RecorderDeps } from '../../src/recorders/recorder.js';
import { normalizeOrderbook } from '../../src/recorders/yesno/normalize.js';
import { YesNoRecorder, yesnoBooksKey } from '../../src/recorders/yesno/feed.js';
import { startSim } from '../../src/sim/server.js';
import { rng } from '../../src/sim/faults.js';

const N = Number(process.env.PMTAPE_BENCH_YESNO_BOOKS ?? 20_000);
const RUN_MS = Number(process.env.PMTAPE_BENCH_YESNO_RUN_MS ?? 5000);

/** N fixed-point bodies with 100 levels a side (ascending, best last), like `depth=100`. */
function bodies(): string[] {
  const r = rng(5);
  const out: string[] = [];
  for (let i = 0; i < N; i++) {
    const side = (): string[][] => Array.from({ length: 100 }, (_, k) => [((k + 1) / 10000 + 0.3).toFixed(4), (r() * 50_000).toFixed(2)]);
    out.push(JSON.stringify({ orderbook_fp: { yes_dollars: side(), no_dollars: side() } }));
  }
  return out;
}

function rawRate(dir: string, msgs: string[]): number {
  const fd = openSync(join(dir, 'raw.jsonl'), 'w');
  const t0 = performance.now();
  for (let i = 0; i < msgs.length; i += 1000) {
    writeSync(fd, `${msgs.slice(i, i + 1000).join('\n')}\n`);
    fsyncSync(fd);
  }
  const s = (performance.now() - t0) / 1000;
  closeSync(fd);
  return msgs.length / s;
}

async function normalizeAppendRate(dir: string, msgs: string[]): Promise<{ rate: number; normalizeOnly: number; parsedOnly: number }> {
  let t0 = performance.now();
  for (const m of msgs) normalizeOrderbook(JSON.parse(m), 1, 100);
  const normalizeOnly = msgs.length / ((performance.now() - t0) / 1000);
  const parsed = msgs.slice(0, 5000).map((m) => JSON.parse(m) as unknown);
  t0 = performance.now();
  for (const p of parsed) normalizeOrderbook(p, 1, 100);
  const parsedOnly = parsed.length / ((performance.now() - t0) / 1000);
  const sink = new LogSink(dir, { monotonic: true, writer: { fsyncIntervalMs: 50, fsyncMaxRecords: 1000 } });
  const key = yesnoBooksKey('KXBENCH15M-26JAN010000-00');
  await sink.writer(key);
  const base = Date.now();
  t0 = performance.now();
  for (let i = 0; i < msgs.length; i++) {
    const [book] = normalizeOrderbook(JSON.parse(msgs[i]), base + i, 100);
    void sink.append(key, book, { checkpoint: true });
    if ((i & 255) === 0 && sink.backpressure) await sink.drained();
  }
  await sink.settle();
  const rate = msgs.length / ((performance.now() - t0) / 1000);
  await sink.close();
  return { rate, normalizeOnly, parsedOnly };
}

/** Books recorded per second from the emulator with `series` active markets and a 10 req/s budget. */
async function budgetYield(dir: string, series: string[]): Promise<{ books_per_s: number; requests_per_s: number; interval_ms: number }> {
  const sim = await startSim({ seed: 11, windowScale: 0.5 });
  const file = join(dir, `cfg-${series.length}.json`);
  writeFileSync(file, JSON.stringify({ ...sim.config, series, upstreams: { yesno: { rest: `${sim.url}/yesno`, rate_per_s: 10 } } }));
  const config = loadConfig({ config: file, dataDir: join(dir, `d${series.length}`) }, {});
  const sink = new LogSink(config.dataDir, { monotonic: true });
  const deps: RecorderDeps = { config, logger: silentLogger, sink, inShard: () => true, shared: new Map() };
  const rec = new YesNoRecorder(deps);
  try {
    await rec.start();
    const ready = Date.now() + 10_000;
    while (rec.connectedMarkets().length < series.length && Date.now() < ready) await new Promise((r) => setTimeout(r, 50));
    const b0 = rec.books;
    const q0 = rec.rest.requests;
    const t0 = Date.now();
    await new Promise((r) => setTimeout(r, RUN_MS));
    const s = (Date.now() - t0) / 1000;
    const out = { books_per_s: (rec.books - b0) / s, requests_per_s: (rec.rest.requests - q0) / s, interval_ms: rec.currentIntervalMs() };
    return out;
  } finally {
    await rec.stop();
    await sink.close();
    await sim.close();
  }
}

export async function runYesNoBench(): Promise<Record<string, unknown>> {
  const dir = mkdtempSync(join(tmpdir(), 'pmtape-bench-yesno-'));
  try {
    const msgs = bodies();
    const bytes = msgs.reduce((n, m) => n + Buffer.byteLength(m) + 1, 0);
    const raw = rawRate(dir, msgs);
    const { rate, normalizeOnly, parsedOnly } = await normalizeAppendRate(dir, msgs);
    const two = await budgetYield(dir, ['KXBTC15M', 'KXETH15M']);
    const eight = await budgetYield(dir, [
      'KXBTC15M',
      'KXETH15M',
      'KXSOL15M',
      'KXXRP15M',
      'KXDOGE15M',
      'KXBNB15M',
      'KXADA15M',
      'KXAVAX15M',
    ]);
    const r2 = (x: number): number => Math.round(x * 100) / 100;
    return {
      book_levels_per_side: 100,
      books: msgs.length,
      book_bytes_avg: Math.round(bytes / msgs.length),
      normalize_append_books_per_s: Math.round(rate),
      parse_normalize_books_per_s: Math.round(normalizeOnly),
      normalize_parsed_books_per_s: Math.round(parsedOnly),
      raw_file_append_books_per_s: Math.round(raw),
      ratio_normalize_append_vs_raw_append: Math.round((rate / raw) * 1000) / 1000,
      budget_req_per_s: 10,
      budget_2_markets: { books_per_s: r2(two.books_per_s), requests_per_s: r2(two.requests_per_s), interval_ms: two.interval_ms },
      budget_8_markets: { books_per_s: r2(eight.books_per_s), requests_per_s: r2(eight.requests_per_s), interval_ms: eight.interval_ms },
      ratio_books_vs_budget: r2(eight.books_per_s / 10),
      // how many times the budget-limited yield one core could normalize and append
      headroom_normalize_append_vs_budget_yield: Math.round(rate / Math.max(0.01, eight.books_per_s)),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
