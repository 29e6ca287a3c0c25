// Coin snapshots sampled on a fixed grid (`interval` 1s/1m/5m/1h; the rules are book/interval-grid.ts).
// A bucket [start, end) holds the last book at or before its end only when the books were valid
// through the whole bucket; any bucket touched by a gap, before capture began, or after the recorder
// stopped is absent from data and reported in `gaps` (consecutive buckets with one reason merged).

import { GapLookahead, readingAhead } from '../../book/gap-lookahead.js';
import { alignUp, alignDown, IntervalGrid } from '../../book/interval-grid.js';
import type { BookShapeOptions } from '../../book/book-model.js';
import { SampledBooks } from '../../book/sampled-books.js';
import type { CoinMarket } from '../../schema/market.js';
import type { GapReason } from '../../schema/observation.js';
import { toIso } from '../../schema/time.js';
import type { LogReader, LogView } from '../../storage/index.js';
import type { IntervalPage, IntervalRequest, GapOut } from '../descriptor.js';
import { coinSnapshot } from './shapes.js';

/** Buckets [b0, bEnd) forward; stops after `maxData` served buckets (returns where it stopped). */
async function sweep(
  view: LogView,
  market: CoinMarket,
  req: IntervalRequest,
  shape: BookShapeOptions,
  b0: number,
  bEnd: number,
  dataEnd: number,
  maxData: number,
): Promise<{ items: Record<string, unknown>[]; gaps: GapOut[]; stoppedAt: number | null }> {
  const state = new SampledBooks(
    'every_outcome',
    market.outcomes.map((o) => o.token_id),
  );
  let reason: GapReason = 'not_recording';
  /** The reason of the gap record about to be applied (it spoils buckets written before it). */
  let spoiling: GapReason = 'not_recording';
  let everValid = false;
  const cp = await view.checkpointAtOrBefore(b0 - 1);
  if (cp) await state.seedFrom(view, cp.pos);

  const items: Record<string, unknown>[] = [];
  const gaps: GapOut[] = [];
  const addGap = (s: number, e: number, why: GapReason): void => {
    const prev = gaps[gaps.length - 1];
    if (prev && prev.reason === why && prev.end === toIso(s)) prev.end = toIso(e);
    else gaps.push({ start: toIso(s), end: toIso(e), reason: why });
  };
  let stoppedAt: number | null = null;
  // Buckets ending after dataEnd are not known: the recorder has not reported past it.
  const ahead = new GapLookahead();
  const grid = new IntervalGrid(
    req.intervalMs,
    b0,
    Math.min(bEnd, dataEnd),
    {
      served: (bs) => {
        if (items.length === maxData) {
          stoppedAt = bs; // the next page starts here
          return false;
        }
        const snap = state.lastBook && coinSnapshot(market, state.lastBook, state.books, shape);
        if (snap) items.push({ ...snap, bucket_start: toIso(bs) });
        else addGap(bs, bs + req.intervalMs, reason);
      },
      unserved: (from, to, spoiled, why) => addGap(from, to, spoiled ? (why ?? spoiling) : everValid || cp ? reason : 'not_recording'),
    },
    ahead,
  );
  // Read past bEnd up to one record: a gap written after the page's range may still spoil its end.
  const records = view.replay(cp ? { pos: cp.pos } : 'start', { until: dataEnd });
  for await (const { rec } of readingAhead(records, (x) => x.rec, ahead)) {
    if (rec.type === 'gap') spoiling = rec.reason;
    grid.advance(rec.recv_ts, state, rec.type === 'gap' ? rec.start_ts : Infinity);
    if (grid.done) break;
    if (rec.type === 'gap' && rec.end_ts === null) reason = rec.reason;
    const was = state.valid();
    state.apply(rec);
    everValid ||= state.valid();
    grid.noteApplied(was, state);
  }
  grid.advance(Infinity, state);
  if (stoppedAt !== null) return { items, gaps, stoppedAt };
  if (grid.position < bEnd) addGap(grid.position, bEnd, 'not_recording');
  return { items, gaps, stoppedAt: null };
}

export async function intervalPage(
  reader: LogReader,
  market: CoinMarket,
  req: IntervalRequest,
  shape: BookShapeOptions,
): Promise<IntervalPage> {
  const I = req.intervalMs;
  const view = await reader.view(); // the days are listed once for the whole page
  const first = await view.first();
  const last = await view.latest();
  if (!first || !last) return { items: [], gaps: [], next: null };
  // Nothing before the first capture is served or listed; buckets end before "now" (minus a second
  // for appends still in flight) and before end_time.
  const lo = alignUp(Math.max(req.start ?? 0, first.rec.recv_ts), I);
  const hi = alignDown(Math.min(req.end ?? Infinity, req.now - 1000), I);
  const dataEnd = req.connected ? req.now : last.rec.recv_ts + 1;
  if (req.order === 'asc') {
    const b0 = req.resume ?? lo;
    if (b0 >= hi) return { items: [], gaps: [], next: null };
    const r = await sweep(view, market, req, shape, b0, hi, dataEnd, req.limit);
    return { items: r.items, gaps: r.gaps, next: r.stoppedAt === null ? null : { bucket: r.stoppedAt } };
  }
  const upper = req.resume ?? hi;
  const b0 = Math.max(lo, upper - req.limit * I);
  if (b0 >= upper) return { items: [], gaps: [], next: null };
  const r = await sweep(view, market, req, shape, b0, upper, dataEnd, Infinity);
  return { items: r.items.reverse(), gaps: r.gaps.reverse(), next: b0 > lo ? { bucket: b0 } : null };
}
