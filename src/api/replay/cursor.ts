// The one place `/v3/replay` reads a market's log: records from a time up to an end, optionally
// preceded by a warm-up (from the checkpoint before the newest book record before that time) so
// book state is known at the first emitted record. Built on today's LogReader calls; when storage
// gains a single-pass `replay(from, until)` operation, only this file changes.

import type { Recorded } from '../../schema/observation.js';
import type { LogReader, Position, RecordChunk } from '../../storage/index.js';
import type { BookModel } from '../../book/book-model.js';
import { anchoredStartIn } from '../query/book-pages.js';

/** Any stored book observation can anchor a warm-up: the newest one before `from` is replayed itself. */
const ANCHOR: BookModel = {
  replay: true,
  candidate: (rec) => rec.type === 'book' || rec.type === 'book_delta' || rec.type === 'yesno_book',
  produces: () => true,
  shape: () => null,
};

export interface CursorRange {
  /** Emit records with receive time ≥ from (epoch ms). */
  readonly from: number;
  /** ...and < end (exclusive). */
  readonly end: number;
  /** Read the warm-up records before `from` too (book state); metrics need none. */
  readonly warmUp: boolean;
}

/**
 * Records of one log over a range, in log order (receive time, then seq), a chunk at a time (one
 * await per chunk: the caller handles each record synchronously). With a warm-up, the records
 * received before `from` come first; they build state and emit nothing.
 */
export async function* marketRecords(reader: LogReader, range: CursorRange): AsyncGenerator<RecordChunk> {
  if (range.from >= range.end) return;
  // One view for the whole pass: each LogReader call plans the log's days again (a listing of the
  // log folder, the partitions' dates and the market's day), three times a replay before this.
  const view = await reader.view();
  const bound = Number.isFinite(range.from) ? await view.seek({ time: range.from }) : null;
  let start: Position | 'start' | null;
  if (range.warmUp) start = await anchoredStartIn(view, ANCHOR, bound ?? 'end');
  else start = bound;
  if (start === null) return;
  yield* view.records(start === 'start' ? 'start' : { pos: start }, { until: range.end });
}

/** The first record received at or after `t`, or null (a gap there may spoil interval samples before it). */
export async function recordAtOrAfter(reader: LogReader, t: number): Promise<Recorded | null> {
  const p = await reader.seekTime(t);
  if (p === null) return null;
  for await (const item of reader.read(p)) return item.rec;
  return null;
}

/** First and last receive time of a log, or null when it holds nothing (market selection by range). */
export async function recordedSpan(reader: LogReader): Promise<{ first: number; last: number } | null> {
  const first = await reader.first();
  const last = await reader.latest();
  return first && last ? { first: first.rec.recv_ts, last: last.rec.recv_ts } : null;
}
