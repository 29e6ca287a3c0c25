// The emulated coin venue's state: rolling 5m/15m up/down markets per coin (listed ahead, open,
// closed, resolved by the coin's random-walk price), each with an Up-token book around a fair price
// and the complementary Down-token book. It emits wire-format `clob` events; the clob and catalog
// mounts serve them. Deterministic for a seed (the wall clock only decides which windows exist).

import { createHash } from 'node:crypto';

export const WINDOW_MS: Record<string, number> = { '5m': 300_000, '15m': 900_000 };

export interface SimMarket {
  readonly id: string;
  readonly eventId: string;
  readonly conditionId: string;
  readonly questionId: string;
  readonly slug: string;
  readonly coin: string;
  readonly window: string;
  readonly startMs: number;
  readonly endMs: number;
  readonly listMs: number;
  readonly closeMs: number;
  readonly resolveMs: number;
  /** About 2 % of markets are cancelled between listing and start (null = never). */
  readonly cancelMs: number | null;
  readonly createdMs: number;
  readonly tokens: readonly [up: string, down: string];
  /** Up-token book in integer ticks of 0.01: tick → size. */
  readonly bids: Map<number, number>;
  readonly asks: Map<number, number>;
  fair: number;
  startPrice: number | null;
  endPrice: number | null;
  volume: number;
  lastTrade: number | null;
  updatedMs: number;
}

/** What the model tells the clob mount: an event for these tokens. */
export type Emit = (tokens: readonly string[], event: Record<string, unknown>) => void;

const sha = (s: string): string => createHash('sha256').update(s).digest('hex');
const px = (tick: number): string => (tick / 100).toFixed(2);
const sz = (n: number): string => String(Math.round(n * 100) / 100);

export class MarketModel {
  readonly markets = new Map<string, SimMarket>();
  private readonly spot = new Map<string, number>();
  private lastStep = 0;

  constructor(
    readonly coins: readonly string[],
    readonly windows: readonly string[],
    readonly scale: number,
    private readonly random: () => number,
    private readonly seed: number,
    /** Windows listed ahead of their start. */
    readonly listAhead = 4,
  ) {
    let p = 100_000;
    for (const c of coins) this.spot.set(c, (p = p / 7 + 500));
  }

  windowMs(w: string): number {
    return Math.max(1000, Math.round((WINDOW_MS[w] ?? 900_000) * this.scale));
  }

  /** Creates the markets that should exist now, moves spot prices, records start/end prices. */
  refresh(now: number): void {
    const dt = this.lastStep === 0 ? 0 : Math.min(5000, now - this.lastStep);
    this.lastStep = now;
    for (const [c, s] of this.spot) this.spot.set(c, s * (1 + 0.0004 * Math.sqrt(dt / 100) * this.gauss()));
    for (const [ci, coin] of this.coins.entries()) {
      for (const [wi, w] of this.windows.entries()) {
        const len = this.windowMs(w);
        const cur = Math.floor(now / len) * len;
        for (let k = -1; k <= this.listAhead; k++) this.ensure(coin, ci, w, wi, cur + k * len, len);
      }
    }
    for (const m of this.markets.values()) {
      if (m.startPrice === null && now >= m.startMs) m.startPrice = this.spot.get(m.coin)!;
      if (m.endPrice === null && now >= m.endMs) {
        m.endPrice = this.spot.get(m.coin)!;
        m.updatedMs = now;
      }
      if (m.endMs < now - 40 * this.windowMs(m.window)) this.markets.delete(m.id);
    }
  }

  private ensure(coin: string, ci: number, w: string, wi: number, startMs: number, len: number): void {
    const startS = Math.floor(startMs / 1000);
    const slug = `${coin}-updown-${w}-${startS}`;
    const id = String(startS * 100 + ci * 10 + wi);
    if (this.markets.has(id)) return;
    const h = sha(`${this.seed}:${slug}`);
    const closeDelay = Math.max(300, Math.round(90_000 * this.scale));
    const m: SimMarket = {
      id,
      slug,
      coin,
      window: w,
      startMs,
      endMs: startMs + len,
      eventId: String(startS * 10 + ci * 3 + wi + 7),
      conditionId: `0x${h}`,
      questionId: `0x${sha(`q:${h}`)}`,
      listMs: startMs - this.listAhead * len,
      createdMs: startMs - this.listAhead * len - 1000,
      closeMs: startMs + len + closeDelay,
      resolveMs: startMs + len + closeDelay + Math.max(200, Math.round(30_000 * this.scale)),
      cancelMs:
        parseInt(h.slice(0, 6), 16) % 50 === 0 ? startMs - Math.round(len * (1 + (parseInt(h.slice(6, 10), 16) % 100) / 100)) : null,
      tokens: [BigInt(`0x${sha(`up:${h}`).slice(0, 62)}`).toString(), BigInt(`0x${sha(`down:${h}`).slice(0, 62)}`).toString()],
      bids: new Map(),
      asks: new Map(),
      fair: 50,
      startPrice: null,
      endPrice: null,
      volume: 0,
      lastTrade: null,
      updatedMs: startMs,
    };
    for (let i = 1; i <= 8; i++) {
      m.bids.set(50 - i, this.size());
      m.asks.set(50 + i, this.size());
    }
    this.markets.set(id, m);
  }

  private gauss(): number {
    return Math.sqrt(-2 * Math.log(1 - this.random())) * Math.cos(2 * Math.PI * this.random());
  }

  private size(): number {
    return Math.round((5 + this.random() * 500) * 100) / 100;
  }

  /** Probability of Up now: a random-walk chance that follows the coin's move since start. */
  private targetFair(m: SimMarket, now: number): number {
    if (m.startPrice === null || now >= m.endMs) return m.fair;
    const rel = Math.log(this.spot.get(m.coin)! / m.startPrice);
    const left = Math.max(0.05, (m.endMs - now) / (m.endMs - m.startMs));
    const z = rel / (0.004 * Math.sqrt(left));
    return Math.min(97, Math.max(3, Math.round(50 + 45 * Math.tanh(z))));
  }

  /** The full book event of one token of `m` (levels worst-to-best, as the venue sends them). */
  bookEvent(m: SimMarket, which: 0 | 1, now: number): Record<string, unknown> {
    const up = which === 0;
    const bids = up ? [...m.bids].map(([t, s]) => [t, s] as const) : [...m.asks].map(([t, s]) => [100 - t, s] as const);
    const asks = up ? [...m.asks].map(([t, s]) => [t, s] as const) : [...m.bids].map(([t, s]) => [100 - t, s] as const);
    bids.sort((a, b) => a[0] - b[0]);
    asks.sort((a, b) => b[0] - a[0]);
    return {
      event_type: 'book',
      asset_id: m.tokens[which],
      market: m.conditionId,
      bids: bids.map(([t, s]) => ({ price: px(t), size: sz(s) })),
      asks: asks.map(([t, s]) => ({ price: px(t), size: sz(s) })),
      timestamp: String(now),
      hash: sha(`${m.id}:${now}:${which}`).slice(0, 40),
      tick_size: '0.01',
      last_trade_price: m.lastTrade === null ? '' : px(which === 0 ? m.lastTrade : 100 - m.lastTrade),
    };
  }

  private best(m: SimMarket): { bid: number | null; ask: number | null } {
    let bid: number | null = null;
    let ask: number | null = null;
    for (const t of m.bids.keys()) if (bid === null || t > bid) bid = t;
    for (const t of m.asks.keys()) if (ask === null || t < ask) ask = t;
    return { bid, ask };
  }

  private change(m: SimMarket, side: 'bid' | 'ask', tick: number, size: number, now: number, emit: Emit): void {
    (side === 'bid' ? m.bids : m.asks)[size > 0 ? 'set' : 'delete'](tick, size);
    const b = this.best(m);
    const h = sha(`${m.id}:${now}:${tick}:${size}`).slice(0, 40);
    const pxOr = (t: number | null, dflt: string): string => (t === null ? dflt : px(t));
    emit(m.tokens, {
      event_type: 'price_change',
      market: m.conditionId,
      timestamp: String(now),
      price_changes: [
        {
          asset_id: m.tokens[0],
          price: px(tick),
          size: sz(size),
          side: side === 'bid' ? 'BUY' : 'SELL',
          hash: h,
          best_bid: pxOr(b.bid, '0'),
          best_ask: pxOr(b.ask, '1'),
        },
        {
          asset_id: m.tokens[1],
          price: px(100 - tick),
          size: sz(size),
          side: side === 'bid' ? 'SELL' : 'BUY',
          hash: h,
          best_bid: b.ask === null ? '0' : px(100 - b.ask),
          best_ask: b.bid === null ? '1' : px(100 - b.bid),
        },
      ],
    });
  }

  /** One market step: fair price moves, one level changes, sometimes a trade (+ fresh books). */
  step(m: SimMarket, now: number, emit: Emit): void {
    if (now >= m.endMs || this.cancelled(m, now)) return;
    const target = this.targetFair(m, now);
    if (target !== m.fair) m.fair += Math.sign(target - m.fair);
    // Levels that would cross the new fair price leave first (each is a change of its own).
    for (const t of [...m.bids.keys()]) if (t >= m.fair) this.change(m, 'bid', t, 0, now, emit);
    for (const t of [...m.asks.keys()]) if (t <= m.fair) this.change(m, 'ask', t, 0, now, emit);
    const side = this.random() < 0.5 ? 'bid' : 'ask';
    const dist = 1 + Math.floor(this.random() * 10);
    const tick = side === 'bid' ? m.fair - dist : m.fair + dist;
    if (tick < 1 || tick > 99) return;
    const book = side === 'bid' ? m.bids : m.asks;
    const size = book.has(tick) && this.random() < 0.35 ? 0 : this.size();
    this.change(m, side, tick, size, now, emit);
    m.updatedMs = now;
    if (this.random() < 0.04) {
      const b = this.best(m);
      const at = this.random() < 0.5 ? b.bid : b.ask;
      if (at === null) return;
      const q = this.size() / 10;
      m.lastTrade = at;
      m.volume += q * (at / 100);
      const sideUp = at === b.ask ? 'BUY' : 'SELL';
      for (const which of [0, 1] as const) {
        emit([m.tokens[which]], {
          event_type: 'last_trade_price',
          asset_id: m.tokens[which],
          market: m.conditionId,
          fee_rate_bps: '0',
          price: px(which === 0 ? at : 100 - at),
          size: sz(q),
          side: which === 0 ? sideUp : sideUp === 'BUY' ? 'SELL' : 'BUY',
          timestamp: String(now),
        });
      }
      // The venue re-sends both books after a trade: the recorder's consistency check point.
      emit([m.tokens[0]], this.bookEvent(m, 0, now));
      emit([m.tokens[1]], this.bookEvent(m, 1, now));
    }
  }

  /** Markets whose books trade now (listed, not ended, not cancelled). */
  live(now: number): SimMarket[] {
    return [...this.markets.values()].filter((m) => m.listMs <= now && now < m.endMs && !this.cancelled(m, now));
  }

  cancelled(m: SimMarket, now: number): boolean {
    return m.cancelMs !== null && now >= m.cancelMs;
  }

  byToken(token: string): SimMarket | undefined {
    for (const m of this.markets.values()) if (m.tokens[0] === token || m.tokens[1] === token) return m;
    return undefined;
  }

  liquidity(m: SimMarket): number {
    let l = 0;
    for (const [t, s] of m.bids) l += (t / 100) * s;
    for (const [t, s] of m.asks) l += (1 - t / 100) * s;
    return Math.round(l * 100) / 100;
  }
}
