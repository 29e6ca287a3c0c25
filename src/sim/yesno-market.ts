// The yes/no emulator's market universe: rolling 15-minute crypto series (KXBTC15M...) with
// realistic tickers (close time in US Eastern), a seeded random-walk "yes" probability per market,
// status lifecycle initialized → active → closed → determined → finalized, and cent-ladder books.

import { rng } from './faults.js';

export { rng };

/** FNV-1a of text mixed with a seed: a stable per-object seed. */
export function hashSeed(seed: number, text: string): number {
  let h = (0x811c9dc5 ^ seed) >>> 0;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

const WINDOW_MS = 15 * 60_000;
const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const eastern = new Intl.DateTimeFormat('en-US', {
  timeZone: 'America/New_York',
  year: '2-digit',
  month: 'numeric',
  day: '2-digit',
  hour: '2-digit',
  minute: '2-digit',
  hourCycle: 'h23',
});

/** `26AUG030230`: the venue's date-time stamp (US Eastern) of an event's close. */
export function easternStamp(ms: number): string {
  const p = Object.fromEntries(eastern.formatToParts(new Date(ms)).map((x) => [x.type, x.value]));
  return `${p.year}${MONTHS[Number(p.month) - 1]}${p.day}${p.hour}${p.minute}`;
}

export const SERIES_RE = /^KX[A-Z0-9]{2,12}15M$/;
const SPOT: Record<string, number> = { BTC: 117_000, ETH: 3_800, SOL: 180, XRP: 3, DOGE: 0.25, BNB: 800 };

export interface SimMarket {
  readonly series: string;
  readonly k: number;
  readonly eventTicker: string;
  readonly ticker: string;
  readonly openMs: number;
  readonly closeMs: number;
  readonly strike: number;
  /** Mutable walk state: the yes probability at tick `tick`. */
  p: number;
  tick: number;
  readonly levels: number;
  readonly legacy: boolean;
  volume: number;
}

export interface UniverseOptions {
  readonly seed: number;
  /** Shrinks 15-minute windows (0.02 → 18 s) for tests. */
  readonly windowScale: number;
  /** Real ms between random-walk steps (scaled too, min 50). */
  readonly stepMs: number;
  readonly bookFormat: 'fixed' | 'legacy' | 'mixed';
  /** Windows kept listed after closing, and listed ahead of opening. */
  readonly keepWindows: number;
  readonly aheadWindows: number;
  readonly now: () => number;
}

/**
 * Markets are derived from (seed, series, window index): any process with the same seed and start
 * time lists the same tickers. Ticker times are "virtual": window k is stamped k windows of 15 real
 * minutes after the anchor, so scaled windows keep realistic, unique tickers.
 */
export class YesNoUniverse {
  readonly windowMs: number;
  private readonly k0: number;
  private readonly anchorMs: number;
  private readonly markets = new Map<string, SimMarket>();

  constructor(readonly o: UniverseOptions) {
    this.windowMs = Math.max(1000, Math.round(WINDOW_MS * o.windowScale));
    const start = o.now();
    this.k0 = Math.floor(start / this.windowMs);
    this.anchorMs = Math.floor(start / WINDOW_MS) * WINDOW_MS;
  }

  private virtualClose(k: number): number {
    return this.anchorMs + (k - this.k0 + 1) * WINDOW_MS;
  }

  market(series: string, k: number): SimMarket {
    const eventTicker = `${series}-${easternStamp(this.virtualClose(k))}`;
    const ticker = `${eventTicker}-${eventTicker.slice(-2)}`;
    let m = this.markets.get(ticker);
    if (!m) {
      const r = rng(hashSeed(this.o.seed, ticker));
      const coin = series.slice(2, -3);
      const base = SPOT[coin] ?? 100;
      const legacy = this.o.bookFormat === 'legacy' || (this.o.bookFormat === 'mixed' && hashSeed(this.o.seed, ticker) % 4 === 0);
      m = {
        series,
        k,
        eventTicker,
        ticker,
        openMs: k * this.windowMs,
        closeMs: (k + 1) * this.windowMs,
        strike: Math.round(base * (1 + (r() - 0.5) * 0.02) * 100) / 100,
        p: 0.5,
        tick: 0,
        levels: 20 + Math.floor(r() * 60),
        legacy,
        volume: Math.floor(r() * 5000),
      };
      this.markets.set(ticker, m);
    }
    return m;
  }

  /** Every market of `series` currently listed, oldest first. */
  list(series: string): SimMarket[] {
    const k = Math.floor(this.o.now() / this.windowMs);
    const out: SimMarket[] = [];
    for (let i = k - this.o.keepWindows; i <= k + this.o.aheadWindows; i++) out.push(this.market(series, i));
    // forget markets that scrolled out, so a long run keeps bounded memory
    for (const [t, m] of this.markets) if (m.series === series && m.k < k - this.o.keepWindows) this.markets.delete(t);
    return out;
  }

  byTicker(ticker: string): SimMarket | undefined {
    const m = this.markets.get(ticker);
    if (m) return m;
    const series = ticker.split('-')[0];
    if (!SERIES_RE.test(series)) return undefined;
    return this.list(series).find((x) => x.ticker === ticker);
  }

  /** Advances the walk up to now (or the close) one seeded step at a time: deterministic per tick. */
  advance(m: SimMarket): void {
    const step = Math.max(50, Math.round(this.o.stepMs * this.o.windowScale));
    const until = Math.floor((Math.min(this.o.now(), m.closeMs) - m.openMs) / step);
    for (; m.tick < until; m.tick++) {
      const r = rng(hashSeed(this.o.seed, `${m.ticker}#${m.tick}`));
      m.p = Math.min(0.97, Math.max(0.03, m.p + (r() - 0.5) * 0.04));
      m.volume += Math.floor(r() * 40);
    }
  }

  status(m: SimMarket): { status: string; result: string; settled: boolean } {
    const now = this.o.now();
    const settle = Math.max(500, Math.round(this.windowMs / 6));
    if (now < m.openMs) return { status: 'initialized', result: '', settled: false };
    if (now < m.closeMs) return { status: 'active', result: '', settled: false };
    this.advance(m);
    const result = m.p >= 0.5 ? 'yes' : 'no';
    if (now < m.closeMs + settle) return { status: 'closed', result: '', settled: false };
    if (now < m.closeMs + 2 * settle) return { status: 'determined', result, settled: false };
    return { status: 'finalized', result, settled: true };
  }

  /** Bid ladders in cents, ascending (best last) as the venue sends them; never crossed. */
  book(m: SimMarket): { yes: Array<[number, number]>; no: Array<[number, number]> } {
    this.advance(m);
    const r = rng(hashSeed(this.o.seed, `${m.ticker}@${m.tick}`));
    const cents = Math.round(m.p * 100);
    const side = (best: number): Array<[number, number]> => {
      const out: Array<[number, number]> = [];
      for (let c = Math.max(1, best - m.levels + 1); c <= best; c++)
        if (r() < 0.85 || c === best) out.push([c, Math.round(1 + r() * 500_000) / 100]);
      return out;
    };
    return { yes: side(Math.max(1, cents - 1)), no: side(Math.max(1, 99 - cents)) };
  }
}
