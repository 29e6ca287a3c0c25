// The API benchmark's sequential probes (tools/bench/api.ts runs them against a `serve` child):
// first snapshot pages at random times, and the delay from an append by another process to the
// latest route showing it.

import { performance } from 'node:perf_hooks';
import { openWriter } from '../../src/storage/index.js';

export function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] * 1000) / 1000;
}

const ladder = (p0: number, step: number, levels = 10): [string, string][] =>
  Array.from({ length: levels }, (_, i) => [(p0 + step * i).toFixed(2), String(100 + i)]);

/**
 * Push-driven freshness from outside: this process (not the server) appends `n` books to the small
 * market's log one at a time and polls latest every millisecond until the server shows each one.
 * The delay from the acknowledged append to the first answer showing it (target ≤ 100 ms).
 */
export async function appendToServed(
  dataDir: string,
  base: string,
  id: string,
  key: string,
  n: number,
): Promise<{ p50_ms: number; p99_ms: number; max_ms: number; appends: number }> {
  const w = await openWriter(dataDir, { family: 'coin', stream: 'books', market: id });
  const delays: number[] = [];
  try {
    for (let i = 0; i < n; i++) {
      const t = Date.now();
      const rec = await w.append({
        type: 'book',
        token_id: `${id}-up`,
        units: 'decimal',
        bids: ladder(0.4 - (i % 5) * 0.01, -0.01),
        asks: ladder(0.45, 0.01),
        recv_ts: t,
        source_ts: t - 3,
      });
      await w.flush();
      const t0 = performance.now();
      for (;;) {
        const r = await fetch(`${base}/v3/btc/markets/${id}/orderbook/latest`, { headers: { authorization: `Bearer ${key}` } });
        const body = (await r.json()) as { data?: { seq?: number } };
        if (body.data?.seq === rec.seq) break;
        if (performance.now() - t0 > 10_000) throw new Error(`append ${rec.seq} not served within 10 s`);
        await new Promise((res) => setTimeout(res, 1));
      }
      delays.push(performance.now() - t0);
      await new Promise((res) => setTimeout(res, 20)); // appends spaced like a live market's
    }
  } finally {
    await w.close();
  }
  return { p50_ms: pct(delays, 50), p99_ms: pct(delays, 99), max_ms: Math.round(Math.max(...delays) * 1000) / 1000, appends: n };
}

/**
 * Sequential first pages at random start times: per-request latency in ms. The server's first
 * requests pay for compiling the snapshot path and for loading each day file's sparse index once
 * (184 ms for the first page of a fresh `serve` over 1e7 records, then 28 ms for the first page on
 * its second day). With 200 samples the p99 was the second largest, so it measured those one-time
 * costs rather than how a page's cost grows with history (the target): `warmup` pages at other
 * random times come first, the first of them reported as `cold_first_ms`, and the p99 is over
 * `count` pages after them.
 */
export async function firstPages(
  base: string,
  id: string,
  n: number,
  T0: number,
  stepMs: number,
  key: string,
  count: number,
  warmup = 20,
): Promise<{ p50_ms: number; p99_ms: number; cold_first_ms: number }> {
  const page = async (seedStart: number, pages: number): Promise<number[]> => {
    const lat: number[] = [];
    let seed = seedStart;
    const rand = (): number => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    for (let i = 0; i < pages; i++) {
      const t = T0 + Math.floor(rand() * n * stepMs);
      const t0 = performance.now();
      const r = await fetch(`${base}/v3/btc/markets/${id}/snapshots?start_time=${t}&limit=100&include_orderbook=true`, {
        headers: { authorization: `Bearer ${key}` },
      });
      const body = (await r.json()) as { data?: unknown[] };
      lat.push(performance.now() - t0);
      if (r.status !== 200 || !body.data || body.data.length === 0) throw new Error(`first page at ${t}: ${r.status}`);
    }
    return lat;
  };
  const cold = await page(777, Math.max(1, warmup));
  const lat = await page(12345, count);
  return { p50_ms: pct(lat, 50), p99_ms: pct(lat, 99), cold_first_ms: Math.round(cold[0] * 1000) / 1000 };
}
