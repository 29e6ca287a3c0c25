// What a recorder's day of one market holds, for the merge's plan: its covered intervals, its gap
// spans and its trades. Read cheaply from a compacted day: the trades and gaps datasets (small),
// the manifest's record index (the last record), and only the few book records the rule needs (the
// first whole book of the day, the first whole book after each gap left open). The bulk of the day,
// its book changes, is read once, by the build pass (market.ts). A day that is not compacted is
// scanned record by record (scanBooks), which gives the same answer.

import type { Family, GapReason, Recorded, Trade } from '../../schema/observation.js';
import type { Dataset } from '../parquet/datasets.js';
import { decodeDataset, recordsOf, type RecordRow } from '../parquet/records.js';
import type { ParquetStore } from '../parquet/reader.js';
import type { LogView } from '../types.js';
import { coveredIntervals, type GapSpan, type RecorderCoverage } from './plan.js';

export interface BooksScan {
  readonly coverage: RecorderCoverage;
  readonly trades: Recorded<Trade>[];
}

/** Records that make a market's books whole again (the end of an open gap). */
const FULL = new Set(['book', 'book_checkpoint', 'yesno_book']);

/** Follows the first-whole-book rule over records in order; `done` once it has found it. */
class FirstValid {
  private readonly tokens = new Set<string>();
  private readonly booked = new Set<string>();
  at: number | null = null;

  see(rec: Recorded): void {
    if (this.at !== null) return;
    if (rec.type === 'book_delta') this.tokens.add(rec.token_id);
    else if (rec.type === 'book') {
      this.tokens.add(rec.token_id);
      this.booked.add(rec.token_id);
      if ([...this.tokens].every((t) => this.booked.has(t))) this.at = rec.recv_ts;
    } else if (rec.type === 'book_checkpoint' || rec.type === 'yesno_book') this.at = rec.recv_ts;
  }
}

/** Gap records in order, each open one ending at the next whole book (the recorders' own rule). */
class GapSpans {
  readonly done: GapSpan[] = [];
  private readonly open = new Map<string, { start: number; reason: GapReason }>();

  get anyOpen(): boolean {
    return this.open.size > 0;
  }

  gap(rec: Recorded): void {
    if (rec.type !== 'gap') return;
    const k = `${rec.start_ts}|${rec.token_id ?? ''}`;
    if (rec.end_ts === null) {
      if (!this.open.has(k)) this.open.set(k, { start: rec.start_ts, reason: rec.reason });
    } else {
      this.open.delete(k);
      this.done.push({ start: rec.start_ts, end: rec.end_ts, reason: rec.reason });
    }
  }

  /** A whole book at `t`: every open gap ends there. */
  whole(t: number): void {
    for (const g of this.open.values()) this.done.push({ start: g.start, end: Math.max(g.start, t), reason: g.reason });
    this.open.clear();
  }

  spans(dayEnd: number): GapSpan[] {
    this.whole(dayEnd); // still open at the end of the day: it lasts to the end
    // In time order whichever way they were found (a scan and a seek close open gaps at other moments).
    return this.done.filter((g) => g.end > g.start).sort((a, b) => a.start - b.start || a.end - b.end);
  }
}

function result(id: string, firstValid: number | null, last: number, dayEnd: number, gaps: GapSpans, trades: Recorded<Trade>[]): BooksScan {
  const lastEnd = Math.min(dayEnd, last + 1);
  const spans = gaps.spans(dayEnd);
  return { coverage: { id, covered: coveredIntervals(firstValid, lastEnd, spans), gaps: spans }, trades };
}

/** One pass over a recorder's books of the day: what it covered, its gap spans and its trades. */
export async function scanBooks(id: string, view: LogView, dayEnd: number): Promise<BooksScan> {
  const trades: Recorded<Trade>[] = [];
  const gaps = new GapSpans();
  const first = new FirstValid();
  let last = -Infinity;
  for await (const { rec } of view.replay('start')) {
    last = rec.recv_ts;
    if (rec.type === 'trade') trades.push(rec);
    gaps.gap(rec);
    first.see(rec);
    if (FULL.has(rec.type) && gaps.anyOpen) gaps.whole(rec.recv_ts);
  }
  return result(id, first.at, last, dayEnd, gaps, trades);
}

/** The records of one v2 dataset of a compacted market-day, in seq order (null: not compacted). */
async function datasetRecords(
  store: ParquetStore,
  family: Family,
  dataset: Dataset,
  day: string,
  market: string,
): Promise<RecordRow[] | null> {
  const files = await store.datasetFiles(family, dataset, day, market);
  if (!files) return null;
  const out: RecordRow[] = [];
  for (const s of files.segments) {
    const t = await files.files.get(s.file)!.reader.readRows(s.rg, s.start, s.rows);
    out.push(...recordsOf(family, dataset, decodeDataset(family, dataset, t), 0, t.numRows));
  }
  return out.sort((a, b) => a.seq - b.seq);
}

/** The first record at or after `from` in `view` that passes `ok`, or null. */
async function firstWhere(view: LogView, from: { seq: number } | 'start', ok: (r: Recorded) => boolean): Promise<Recorded | null> {
  for await (const { rec } of view.replay(from)) if (ok(rec)) return rec;
  return null;
}

/**
 * The scan of a compacted market-day without reading its book changes (see the file's comment);
 * null when the day is not compacted in `store` (scan it with scanBooks).
 */
export async function scanCompactedBooks(
  id: string,
  store: ParquetStore,
  view: LogView,
  key: { readonly family: Family; readonly market: string },
  day: string,
  dayEnd: number,
): Promise<BooksScan | null> {
  const { family, market } = key;
  const summary = await store.daySummary(family, 'books', day, market);
  if (summary === undefined) return null;
  const gapRows = await datasetRecords(store, family, 'gaps', day, market);
  const tradeRows = await datasetRecords(store, family, 'trades', day, market);
  if (gapRows === null || tradeRows === null) return null;
  const gaps = new GapSpans();
  const trades = tradeRows.map((r) => r.rec as Recorded<Trade>);
  if (summary === null) return result(id, null, -Infinity, dayEnd, gaps, trades);
  const first = new FirstValid();
  await firstWhere(view, 'start', (r) => {
    first.see(r);
    return first.at !== null;
  });
  // An open gap ends at the first whole book after it (by seq): found by a seek, not a scan.
  let next: Recorded | null | undefined; // the whole book after the open gaps; undefined: not looked up
  for (const { rec, seq } of gapRows) {
    if (next && next.seq < seq) {
      if (gaps.anyOpen) gaps.whole(next.recv_ts);
      next = undefined;
    }
    gaps.gap(rec);
    if (gaps.anyOpen && next === undefined) next = await firstWhere(view, { seq: seq + 1 }, (r) => FULL.has(r.type));
  }
  if (gaps.anyOpen && next) gaps.whole(next.recv_ts);
  return result(id, first.at, summary.last.recv_ts, dayEnd, gaps, trades);
}
