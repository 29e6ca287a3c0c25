// `candle_1m` lines of a replay (API.md §10): one line per market and minute, after the minute has
// ended (its receive_time is the minute's end, as an interval snapshot's is its bucket's end), with
// every outcome's candle of that minute in `data.candles`. The candles are storage/candles/, the same
// as the route's and the `candles` dataset's; the replay reads them a day at a time.

import { DAY_MS } from '../../schema/time.js';
import { CANDLE_DATASET_INTERVAL_MS, candlesOf, type Candle, type LogReader } from '../../storage/index.js';
import { candleJson } from '../query/candles.js';
import { replayIso, type ReplayMarket } from '../../book/replay-book.js';
import { compareKeys, type LineKey } from './plan.js';
import type { ReplayLine } from './lines.js';

export const CANDLE_LINE = 'candle_1m';

export interface CandleLinesRequest {
  readonly market: ReplayMarket;
  readonly reader: LogReader;
  /** Minutes that start at or after `start` and end no later than `stop` make lines. */
  readonly start: number;
  readonly stop: number;
  readonly after: LineKey | null;
}

/** The market's candle lines in line order, in batches (a day's at most). */
export async function* candleLines(req: CandleLinesRequest): AsyncGenerator<ReplayLine[]> {
  const m = req.market;
  const I = CANDLE_DATASET_INTERVAL_MS;
  const outcomes = m.market !== null && 'outcomes' in m.market ? m.market.outcomes : [];
  const view = await req.reader.view();
  const first = Math.ceil(req.start / I) * I;
  for (let lo = first; lo + I <= req.stop; lo += DAY_MS) {
    const hi = Math.min(lo + DAY_MS, Math.floor(req.stop / I) * I);
    const candles = await candlesOf(view, { family: m.family, market: m.id, outcomes, intervalMs: I, start: lo, end: hi });
    const byMinute = new Map<number, Candle[]>();
    for (const c of candles) {
      if (c.start < lo || c.start + I > req.stop) continue;
      const list = byMinute.get(c.start);
      if (list) list.push(c);
      else byMinute.set(c.start, [c]);
    }
    const out: ReplayLine[] = [];
    for (const [start, cs] of byMinute) {
      const at = cs.reduce((a, c) => (c.at.seq > a.at.seq ? c : a)).at;
      const key = { t: start + I, market: m.id, seq: at.seq, type: CANDLE_LINE };
      if (req.after !== null && compareKeys(key, req.after) <= 0) continue;
      const data = { start: replayIso.format(start), candles: cs.map((c) => candleJson(m.family, c)) };
      const src = at.source_ts === null ? null : replayIso.format(at.source_ts);
      const text = JSON.stringify({
        type: CANDLE_LINE,
        family: m.family,
        [m.idField]: m.id,
        seq: at.seq,
        receive_time: replayIso.format(start + I),
        source_time: src,
        data,
      });
      out.push({ ...key, text });
    }
    if (out.length > 0) yield out.sort(compareKeys);
  }
}
