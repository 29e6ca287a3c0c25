// The wallet emulator's universe: rolling 5m/15m up/down topics per coin over underlying markets
// (integer ids, condition ids, 77-digit outcome token ids, chain 56), status upcoming → open →
// closed → resolved (or cancelled), oracle resolution with pushes on ties, versioned full books.

import { hashSeed, rng } from './yesno-market.js';

const WINDOW_MS: Record<string, number> = { '5m': 300_000, '15m': 900_000, '1h': 3_600_000 };
const SPOT: Record<string, number> = { btc: 117_000, eth: 3_800, bnb: 800, sol: 180 };
export const EXCHANGE_CONTRACT = '0x8BC070BEdAB741406F4B1Eb65A72bee27894B689';

export interface WalletSimMarket {
  readonly coin: string;
  readonly window: string;
  readonly k: number;
  readonly id: number;
  readonly topicId: string;
  readonly slug: string;
  readonly conditionId: string;
  readonly tokens: readonly [string, string];
  readonly startMs: number;
  readonly endMs: number;
  readonly startPrice: number;
  readonly endPrice: number;
  readonly cancelled: boolean;
  /** Walk state: P(up) at book version `version`. */
  p: number;
  version: number;
}

export interface WalletUniverseOptions {
  readonly seed: number;
  readonly windowScale: number;
  readonly coins: readonly string[];
  readonly windows: readonly string[];
  /** Real ms between book versions (a new full snapshot). */
  readonly bookStepMs: number;
  readonly now: () => number;
}

function hex(seed: number, text: string, n: number): string {
  let out = '';
  for (let i = 0; out.length < n; i++) out += hashSeed(seed, `${text}/${i}`).toString(16).padStart(8, '0');
  return out.slice(0, n);
}
function digits(seed: number, text: string, n: number): string {
  let out = String(1 + (hashSeed(seed, text) % 9));
  for (let i = 0; out.length < n; i++) out += String(hashSeed(seed, `${text}#${i}`)).padStart(10, '0');
  return out.slice(0, n);
}

export class WalletUniverse {
  private readonly markets = new Map<number, WalletSimMarket>();
  private readonly start: number;

  constructor(readonly o: WalletUniverseOptions) {
    this.start = o.now();
  }

  windowMs(w: string): number {
    return Math.max(1000, Math.round((WINDOW_MS[w] ?? 900_000) * this.o.windowScale));
  }

  private make(coin: string, window: string, k: number): WalletSimMarket {
    const wms = this.windowMs(window);
    const real = WINDOW_MS[window] ?? 900_000;
    // slugs carry a realistic unix start: window k stamped k real windows after the anchor
    const virtualStart = Math.floor(this.start / real) * real + (k - Math.floor(this.start / wms)) * real;
    const name = `${coin}-${window}-${k}`;
    const r = rng(hashSeed(this.o.seed, name));
    const startPrice = Math.round((SPOT[coin] ?? 100) * (1 + (r() - 0.5) * 0.02) * 100) / 100;
    const roll = r();
    const move = (r() - 0.5) * 0.004 * startPrice;
    return {
      coin,
      window,
      k,
      id: 100_000 + (hashSeed(this.o.seed, `id:${name}`) % 8_900_000),
      topicId: String(10_000_000 + (hashSeed(this.o.seed, `topic:${name}`) % 89_999_999)),
      slug: `${coin}-updown-${window}-${Math.floor(virtualStart / 1000)}`,
      conditionId: `0x${hex(this.o.seed, `cond:${name}`, 64)}`,
      tokens: [digits(this.o.seed, `up:${name}`, 77), digits(this.o.seed, `down:${name}`, 77)],
      startMs: k * wms,
      endMs: (k + 1) * wms,
      startPrice,
      // about one window in ten ends exactly where it started: a tie, settled as a push
      endPrice: roll < 0.1 ? startPrice : Math.round((startPrice + move) * 100) / 100,
      cancelled: roll > 0.97,
      p: 0.5,
      version: 0,
    };
  }

  /** Every listed market: a few windows back (awaiting/after resolution) and two ahead. */
  list(): WalletSimMarket[] {
    const now = this.o.now();
    const out: WalletSimMarket[] = [];
    for (const coin of this.o.coins) {
      for (const window of this.o.windows) {
        const wms = this.windowMs(window);
        const k = Math.floor(now / wms);
        for (let i = k - 4; i <= k + 2; i++) {
          const probe = this.make(coin, window, i);
          const m = this.markets.get(probe.id) ?? probe;
          this.markets.set(m.id, m);
          out.push(m);
        }
        for (const [id, m] of this.markets) if (m.coin === coin && m.window === window && m.k < k - 4) this.markets.delete(id);
      }
    }
    return out.sort((a, b) => a.startMs - b.startMs || a.id - b.id);
  }

  byId(id: string): WalletSimMarket | undefined {
    const n = Number(id);
    if (!Number.isSafeInteger(n)) return undefined;
    return this.markets.get(n) ?? this.list().find((m) => m.id === n);
  }

  status(m: WalletSimMarket): 'UPCOMING' | 'OPEN' | 'CLOSED' | 'RESOLVED' | 'CANCELLED' {
    const now = this.o.now();
    if (now < m.startMs) return 'UPCOMING';
    if (m.cancelled) return 'CANCELLED';
    if (now < m.endMs) return 'OPEN';
    return now < m.endMs + Math.max(500, (m.endMs - m.startMs) / 5) ? 'CLOSED' : 'RESOLVED';
  }

  /** Advances the book version to now: one seeded step per version (deterministic). */
  advance(m: WalletSimMarket): void {
    const step = Math.max(50, Math.round(this.o.bookStepMs));
    const until = Math.max(0, Math.floor((Math.min(this.o.now(), m.endMs) - m.startMs) / step)) + 1;
    for (; m.version < until; m.version++) {
      const r = rng(hashSeed(this.o.seed, `${m.id}v${m.version}`));
      m.p = Math.min(0.97, Math.max(0.03, m.p + (r() - 0.5) * 0.05));
    }
  }

  /** The update time of the current version. */
  versionTs(m: WalletSimMarket): number {
    return Math.min(m.endMs, m.startMs + (m.version - 1) * Math.max(50, Math.round(this.o.bookStepMs)));
  }

  /** The full book of the first outcome at the current version: numbers, best first. */
  book(m: WalletSimMarket): {
    marketId: number;
    updateTimestampMs: number;
    asks: number[][];
    bids: number[][];
    version: number;
    orderCount: number;
  } {
    this.advance(m);
    const r = rng(hashSeed(this.o.seed, `${m.id}b${m.version}`));
    const mid = Math.round(m.p * 100);
    const asks: number[][] = [];
    const bids: number[][] = [];
    const depth = 5 + Math.floor(r() * 15);
    for (let i = 1; i <= depth; i++) {
      if (mid + i <= 99 && r() < 0.8) asks.push([(mid + i) / 100, Math.round(r() * 200_000) / 100 + 1]);
      if (mid - i >= 1 && r() < 0.8) bids.push([(mid - i) / 100, Math.round(r() * 200_000) / 100 + 1]);
    }
    return { marketId: m.id, updateTimestampMs: this.versionTs(m), asks, bids, version: m.version, orderCount: asks.length + bids.length };
  }

  /** Volume, liquidity and participants grow with the book's versions. */
  stats(m: WalletSimMarket): { volume: number; liquidity: number; participants: number } {
    this.advance(m);
    return {
      volume: Math.round(m.version * 137.5 * 100) / 100,
      liquidity: Math.round((1000 + m.version * 3.25) * 100) / 100,
      participants: Math.floor(m.version / 3),
    };
  }
}
