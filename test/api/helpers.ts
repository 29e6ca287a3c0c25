// Test helpers of the read side: a temp data dir, a config without rate limits, keys, an app on
// port 0, and a seeded data set written through the storage writer with realistic schema records
// (catalogue events, full books, deltas, checkpoints, gaps, metric samples, yes/no books).

import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { loadConfig, type Config } from '../../src/config.js';
import { buildApp } from '../../src/api/app.js';
import { createKey } from '../../src/api/plugins/keys.js';
import { openWriter } from '../../src/storage/index.js';
import type { CoinMarket, WalletMarket, YesNoMarket } from '../../src/schema/market.js';
import type { Family, Observation, StreamName } from '../../src/schema/observation.js';

export interface Tap {
  teardown(fn: () => unknown): void;
}

export function tmpDataDir(t: Tap): string {
  const dir = mkdtempSync(join(tmpdir(), 'pmtape-api-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export function testConfig(dataDir: string, over: Partial<Config> = {}): Config {
  return { ...loadConfig({ dataDir }, {}), rateLimits: null, logLevel: 'silent', ...over };
}

export async function testApp(t: Tap, config: Config, keyPollMs = 50): Promise<FastifyInstance> {
  const app = await buildApp({ config, logger: false, keyPollMs });
  t.teardown(() => app.close());
  return app;
}

export async function keysFor(dataDir: string): Promise<{ free: string; paid: string }> {
  const free = (await createKey(dataDir, 'free', 'test-free')).key;
  const paid = (await createKey(dataDir, 'paid', 'test-paid')).key;
  return { free, paid };
}

export const T0 = Date.parse('2026-07-26T12:00:00.000Z');

/** Deterministic PRNG (mulberry32). */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = a;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

export const coinMarket: CoinMarket = {
  family: 'coin',
  market_id: '540817',
  event_id: '88001',
  condition_id: '0xc0ffee01',
  slug: 'btc-updown-15m-1785067200',
  question: 'Bitcoin Up or Down - July 26, 12:00PM-12:15PM ET',
  outcomes: [
    { label: 'Up', token_id: '1111' },
    { label: 'Down', token_id: '2222' },
  ],
  coin: 'btc',
  window: '15m',
  start_time: T0,
  end_time: T0 + 900_000,
  created_time: T0 - 3_600_000,
  updated_time: T0,
  status: 'open',
  resolution: null,
  winning_outcome: null,
  resolved_time: null,
  volume: 1234.5,
  liquidity: 567.8,
  native: { id: '540817', slug: 'btc-updown-15m-1785067200', active: true },
};

export const walletMarket: WalletMarket = {
  family: 'wallet-prediction',
  topic_id: 'topic-77',
  market_id: 'w-9001',
  condition_id: '0xabc9001',
  slug: 'btc-15m-9001',
  outcomes: [
    { label: 'Up', token_id: '7001' },
    { label: 'Down', token_id: '7002' },
  ],
  coin: 'btc',
  window: '15m',
  start_time: T0,
  end_time: T0 + 900_000,
  created_time: T0 - 600_000,
  updated_time: T0,
  status: 'open',
  resolution: null,
  winning_outcome: null,
  resolved_time: null,
  volume: 10.5,
  liquidity: 99,
  participants: 3,
  chain: { chain_id: 56, exchange_contract: '0x0000000000000000000000000000000000000056' },
  start_price: null,
  end_price: null,
  native: { topicId: 'topic-77' },
};

export const yesnoMarket: YesNoMarket = {
  family: 'yesno-exchange',
  market_id: 'KXBTC15M-26JUL261215-15',
  ticker: 'KXBTC15M-26JUL261215-15',
  event_ticker: 'KXBTC15M-26JUL261215',
  series_ticker: 'KXBTC15M',
  title: 'BTC price up in next 15 mins?',
  status: 'active',
  open_time: T0,
  close_time: T0 + 900_000,
  result: '',
  native: { ticker: 'KXBTC15M-26JUL261215-15', status: 'active' },
};

type W = {
  append(o: Observation, opts?: { checkpoint?: boolean }): Promise<unknown>;
  close(): Promise<void>;
  backpressure: boolean;
  drained(): Promise<void>;
};

export async function writeLog(dataDir: string, family: Family, stream: StreamName, market: string, recs: Observation[]): Promise<void> {
  const w = (await openWriter(dataDir, { family, stream, market }, { fsyncIntervalMs: 2, fsyncMaxRecords: 100_000 })) as W;
  // Appends resolve on fsync (group commit): queue them all, honour backpressure, await once.
  const acks: Promise<unknown>[] = [];
  for (const r of recs) {
    acks.push(w.append(r, r.type === 'book_checkpoint' ? { checkpoint: true } : undefined));
    if (w.backpressure) await w.drained();
  }
  await Promise.all(acks);
  await w.close();
}

const px = (p: number): string => p.toFixed(2);

/** Random two-sided ladders around `mid` in decimal text. */
function ladders(r: () => number, mid: number, n = 5): { bids: [string, string][]; asks: [string, string][] } {
  const bids: [string, string][] = [];
  const asks: [string, string][] = [];
  for (let i = 0; i < n; i++) {
    bids.push([px(mid - 0.01 * (i + 1)), (Math.floor(r() * 900) + 100).toFixed(1)]);
    asks.push([px(mid + 0.01 * i), (Math.floor(r() * 900) + 100).toFixed(1)]);
  }
  return { bids, asks };
}

/**
 * A coin-style books log: full books for each token, deltas every `stepMs`, a checkpoint every
 * `cpEvery` deltas, and (optionally) a disconnect gap over [gapAt, gapAt + gapMs).
 */
export function bookRecords(
  tokens: string[],
  opts: { start: number; n: number; stepMs: number; cpEvery?: number; gapAt?: number; gapMs?: number; seed?: number; trades?: boolean },
): Observation[] {
  const r = rng(opts.seed ?? 1);
  const out: Observation[] = [];
  const state = new Map<string, { bids: Map<string, string>; asks: Map<string, string> }>();
  const full = (tok: string, t: number, mid: number): void => {
    const l = ladders(r, mid);
    state.set(tok, { bids: new Map(l.bids), asks: new Map(l.asks) });
    out.push({ type: 'book', token_id: tok, units: 'decimal', bids: l.bids, asks: l.asks, recv_ts: t, source_ts: t - 5 });
  };
  tokens.forEach((tok, i) => full(tok, opts.start, i === 0 ? 0.52 : 0.48));
  let sinceCp = 0;
  let inGap = false;
  for (let i = 1; i <= opts.n; i++) {
    const t = opts.start + i * opts.stepMs;
    if (opts.gapAt !== undefined && !inGap && t >= opts.gapAt && t < opts.gapAt + (opts.gapMs ?? 0)) {
      inGap = true;
      out.push({ type: 'gap', reason: 'disconnected', start_ts: t, end_ts: null, recv_ts: t, source_ts: null });
      continue;
    }
    if (inGap) {
      if (t < opts.gapAt! + opts.gapMs!) continue;
      inGap = false;
      tokens.forEach((tok, k) => full(tok, t, k === 0 ? 0.5 : 0.5));
      out.push({ type: 'gap', reason: 'disconnected', start_ts: opts.gapAt!, end_ts: t, recv_ts: t, source_ts: null });
      continue;
    }
    const tok = tokens[Math.floor(r() * tokens.length)];
    const s = state.get(tok)!;
    const side = r() < 0.5 ? 'bid' : 'ask';
    const book = side === 'bid' ? s.bids : s.asks;
    const keys = [...book.keys()];
    const price =
      r() < 0.3 && keys.length > 1 ? keys[Math.floor(r() * keys.length)] : px(side === 'bid' ? 0.3 + r() * 0.15 : 0.55 + r() * 0.15);
    const size = r() < 0.2 ? '0' : (Math.floor(r() * 900) + 1).toFixed(1);
    if (size === '0') book.delete(price);
    else book.set(price, size);
    out.push({ type: 'book_delta', token_id: tok, changes: [{ side, price, size }], recv_ts: t, source_ts: t - 3 });
    if (opts.trades && r() < 0.1)
      out.push({ type: 'trade', token_id: tok, price: '0.51', size: '10', side: 'buy', recv_ts: t, source_ts: t - 2 });
    if (opts.cpEvery && ++sinceCp >= opts.cpEvery) {
      sinceCp = 0;
      const books = tokens.map((k) => {
        const st = state.get(k)!;
        return {
          token_id: k,
          bids: [...st.bids].sort((a, b) => Number(b[0]) - Number(a[0])),
          asks: [...st.asks].sort((a, b) => Number(a[0]) - Number(b[0])),
        };
      });
      out.push({ type: 'book_checkpoint', units: 'decimal', books, recv_ts: t, source_ts: null });
    }
  }
  return out;
}

export function yesnoRecords(start: number, n: number, stepMs: number): Observation[] {
  const out: Observation[] = [];
  for (let i = 0; i < n; i++) {
    const yes: [string, string][] = [];
    const no: [string, string][] = [];
    for (let k = 0; k < 3 + (i % 4); k++) {
      yes.push([(0.52 - 0.01 * k).toFixed(4), `${120 + i + k}.00`]);
      no.push([(0.47 - 0.01 * k).toFixed(4), `${80 + i}.00`]);
    }
    out.push({ type: 'yesno_book', units: 'dollars', yes, no, recv_ts: start + i * stepMs, source_ts: start + i * stepMs - 100 });
  }
  return out;
}

export const catalog = (m: CoinMarket | WalletMarket | YesNoMarket, t: number): Observation => ({
  type: 'catalog',
  event: 'listed',
  changed: [],
  market: m,
  recv_ts: t,
  source_ts: null,
});

/** Writes one market of each family with books (and metrics for the wallet market). */
export async function seedAll(dataDir: string): Promise<void> {
  await writeLog(dataDir, 'coin', 'catalog', coinMarket.market_id, [catalog(coinMarket, T0 - 1000)]);
  await writeLog(
    dataDir,
    'coin',
    'books',
    coinMarket.market_id,
    bookRecords(['1111', '2222'], { start: T0, n: 400, stepMs: 250, cpEvery: 50, gapAt: T0 + 40_000, gapMs: 10_000, trades: true }),
  );
  await writeLog(dataDir, 'wallet-prediction', 'catalog', walletMarket.market_id, [catalog(walletMarket, T0 - 2000)]);
  await writeLog(
    dataDir,
    'wallet-prediction',
    'books',
    walletMarket.market_id,
    bookRecords(['7001'], { start: T0, n: 300, stepMs: 200, cpEvery: 40, seed: 7 }),
  );
  const metrics: Observation[] = [];
  for (let i = 0; i < 90; i++) {
    const metric = (['chance', 'price', 'last_trade'] as const)[i % 3];
    metrics.push({
      type: 'metric',
      metric,
      outcome: i % 2 ? 'Down' : 'Up',
      value: 0.5 + i / 1000,
      recv_ts: T0 + i * 1000,
      source_ts: T0 + i * 1000 - 10,
    });
  }
  await writeLog(dataDir, 'wallet-prediction', 'metrics', walletMarket.market_id, metrics);
  await writeLog(dataDir, 'yesno-exchange', 'catalog', yesnoMarket.market_id, [catalog(yesnoMarket, T0 - 3000)]);
  await writeLog(dataDir, 'yesno-exchange', 'books', yesnoMarket.market_id, yesnoRecords(T0, 60, 1000));
}

/** Every file under `dir` with its size, sorted: a fingerprint that shows any write to the data dir. */
export function dirTree(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const n of readdirSync(d)) {
      const p = join(d, n);
      const st = statSync(p);
      if (st.isDirectory()) walk(p);
      else out.push(`${p}:${st.size}`);
    }
  };
  walk(dir);
  return out.sort();
}
