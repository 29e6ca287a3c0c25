// Candles read from a market's composite view (logs and compacted days alike): the window is
// replayed from the checkpoint before it through CandleBuilder. The route, replay and the `candles`
// dataset all come here, so a candle is the same whichever asked for it.

import { alignDown, alignUp } from '../../book/interval-grid.js';
import type { Family } from '../../schema/observation.js';
import { DAY_MS, dayStartMs } from '../../schema/time.js';
import type { LogView } from '../types.js';
import type { RowSink } from '../parquet/rows.js';
import { scalesOf, snapshotBooksOf } from '../parquet/datasets.js';
import { CandleBuilder, candleOutcomes, type Candle } from './candle-builder.js';

export type { Candle, CandleOutcome, Ohlc } from './candle-builder.js';

/** The candle intervals the route accepts, in ms; the dataset and replay use `1m`. */
export const CANDLE_INTERVALS: Readonly<Record<string, number>> = { '1m': 60_000, '5m': 300_000, '1h': 3_600_000, '1d': DAY_MS };
export const CANDLE_DATASET_INTERVAL_MS = 60_000;

export interface CandleQuery {
  readonly family: Family;
  readonly market: string;
  /** The catalogue's outcomes in its order (empty for yes/no, or when the catalogue does not know the market). */
  readonly outcomes: readonly { readonly label: string; readonly token_id: string }[];
  readonly intervalMs: number;
  /** [start, end) in epoch ms; widened to whole candles. */
  readonly start: number;
  readonly end: number;
}

/** The price and size scales of the family's candles (mid has one more decimal than the prices). */
export const candleScales = (family: Family): { price: number; size: number } => scalesOf(family);

/**
 * Every candle of [start, end): nothing before the market's first record, nothing after its last
 * unless the log goes on past `end` (the last candle then counts its gap only up to what is known).
 */
export async function candlesOf(view: LogView, q: CandleQuery): Promise<Candle[]> {
  const I = q.intervalMs;
  const mode = snapshotBooksOf(q.family);
  const outcomes = candleOutcomes(mode, q.outcomes);
  if (outcomes.length === 0) return [];
  const first = await view.first();
  const last = await view.latest();
  if (!first || !last) return [];
  const lo = Math.max(alignDown(q.start, I), alignDown(first.rec.recv_ts, I));
  const end = alignUp(q.end, I);
  const knownEnd = last.rec.recv_ts >= end ? end : last.rec.recv_ts + 1;
  if (lo >= knownEnd) return [];
  const s = scalesOf(q.family);
  const b = new CandleBuilder({ mode, outcomes, intervalMs: I, lo, priceScale: s.price, sizeScale: s.size, where: `market ${q.market}` });
  const cp = lo > first.rec.recv_ts ? await view.checkpointAtOrBefore(lo - 1) : null;
  for await (const chunk of view.records(cp ? { pos: cp.pos } : 'start', { until: knownEnd })) {
    for (let i = 0; i < chunk.length; i++) b.apply(chunk.record(i));
  }
  return b.finish(knownEnd);
}

/** Appends the market's `candles` rows (1 m) of the UTC day to `sink`; returns the number of rows. */
export async function candleRows(
  view: LogView,
  input: { family: Family; market: string; day: string; outcomes: ReadonlyMap<string, string> },
  sink: RowSink,
): Promise<number> {
  const dayStart = dayStartMs(input.day)!;
  const outcomes = [...input.outcomes].map(([token_id, label]) => ({ token_id, label }));
  const candles = await candlesOf(view, {
    family: input.family,
    market: input.market,
    outcomes,
    intervalMs: CANDLE_DATASET_INTERVAL_MS,
    start: dayStart,
    end: dayStart + DAY_MS,
  });
  const yn = snapshotBooksOf(input.family) === 'yesno';
  for (const c of candles) {
    sink.reset();
    sink.set('market_id', input.market);
    sink.set('candle_start', c.start);
    sink.set('receive_time', c.at.recv_ts);
    sink.set('source_time', c.at.source_ts);
    sink.set('seq', c.at.seq);
    sink.set('token_id', c.outcome.token);
    sink.set('outcome', c.outcome.label);
    if (yn) sink.set('units', c.units);
    for (const [k, o] of [
      ['mid', c.mid],
      ['last', c.last],
    ] as const) {
      sink.set(`${k}_open`, o?.open ?? null);
      sink.set(`${k}_high`, o?.high ?? null);
      sink.set(`${k}_low`, o?.low ?? null);
      sink.set(`${k}_close`, o?.close ?? null);
    }
    sink.set('best_bid', c.bestBid);
    sink.set('best_ask', c.bestAsk);
    sink.set('volume', c.volume <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(c.volume) : c.volume);
    sink.set('trades', c.trades);
    sink.set('gap_seconds', c.gapMs); // DECIMAL scale 3: milliseconds are its unscaled value
    sink.emit();
  }
  return candles.length;
}
