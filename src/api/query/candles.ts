// Pages of candles for `GET …/candles` (storage/candles/ computes them): the query window is read a
// stretch at a time, growing over stretches with no candle (a long gap, days before the market was
// recorded), until a page is full. A cursor is the next candle start (asc) or the exclusive upper
// candle bound (desc); a candle's outcome, prices and gap time are the same whichever page holds it.

import { alignDown, alignUp } from '../../book/interval-grid.js';
import type { Family } from '../../schema/observation.js';
import { toIso } from '../../schema/time.js';
import { candleScales, candlesOf, type Candle, type LogView, type Ohlc } from '../../storage/index.js';
import type { CursorPos } from './cursor.js';

export interface CandlePageRequest {
  readonly family: Family;
  readonly market: string;
  readonly outcomes: readonly { readonly label: string; readonly token_id: string }[];
  /** The outcome label the page is about (the first outcome when absent). */
  readonly outcome: string | undefined;
  readonly intervalMs: number;
  readonly order: 'asc' | 'desc';
  readonly limit: number;
  readonly start: number | undefined;
  readonly end: number | undefined;
  readonly resume: number | undefined;
}

export interface CandlePage {
  readonly items: Candle[];
  readonly next: CursorPos | null;
}

/** One page of the outcome's candles over [start, end) (whole candles: a candle starting before `end`). */
export async function candlePage(view: LogView, r: CandlePageRequest): Promise<CandlePage> {
  const I = r.intervalMs;
  const first = await view.first();
  const last = await view.latest();
  if (!first || !last) return { items: [], next: null };
  let lo = Math.max(alignDown(r.start ?? first.rec.recv_ts, I), alignDown(first.rec.recv_ts, I));
  let hi = Math.min(alignUp(r.end ?? last.rec.recv_ts + 1, I), alignUp(last.rec.recv_ts + 1, I));
  if (r.resume !== undefined) {
    if (r.order === 'asc') lo = Math.max(lo, r.resume);
    else hi = Math.min(hi, r.resume);
  }
  // A yes/no market's one candle series is its `yes` side.
  const label = r.outcome ?? r.outcomes[0]?.label ?? 'yes';
  const pick = (cs: Candle[]): Candle[] => cs.filter((c) => c.outcome.label === label);
  const items: Candle[] = [];
  let span = r.limit * I;
  while (lo < hi) {
    const [a, b] = r.order === 'asc' ? [lo, Math.min(hi, lo + span)] : [Math.max(lo, hi - span), hi];
    const got = pick(await candlesOf(view, { family: r.family, market: r.market, outcomes: r.outcomes, intervalMs: I, start: a, end: b }));
    if (r.order === 'desc') got.reverse();
    for (const c of got) {
      if (items.length === r.limit) {
        // The page is full and this candle is the next page's first.
        return { items, next: { bucket: r.order === 'asc' ? c.start : c.start + I } };
      }
      items.push(c);
    }
    if (r.order === 'asc') lo = b;
    else hi = a;
    if (got.length === 0) span *= 2; // a stretch with no candle: look further at once
  }
  return { items, next: null };
}

/** A candle as the route, replay and stream show it: prices as numbers in the book's units. */
export function candleJson(family: Family, c: Candle): Record<string, unknown> {
  const s = candleScales(family);
  const p = 10 ** s.price;
  const m = 10 ** (s.price + 1);
  const ohlc = (o: Ohlc | null, d: number): Record<string, number> | null =>
    o === null ? null : { open: o.open / d, high: o.high / d, low: o.low / d, close: o.close / d };
  return {
    start: toIso(c.start),
    outcome: c.outcome.label,
    ...(c.units !== null ? { units: c.units } : {}),
    mid: ohlc(c.mid, m),
    last_trade: ohlc(c.last, p),
    best_bid: c.bestBid === null ? null : c.bestBid / p,
    best_ask: c.bestAsk === null ? null : c.bestAsk / p,
    volume: Number(c.volume) / 10 ** s.size,
    trades: c.trades,
    gap_seconds: c.gapMs / 1000,
  };
}
