// Coverage of one market: first/last record per dataset, and the recorded intervals and gaps of its
// books computed from the gap records in the log (an open gap ends at the next full book). Results
// are kept per market and updated incrementally, so repeated questions read only new records.

import { LRUCache } from 'lru-cache';
import type { Family, GapReason, StreamName } from '../../schema/observation.js';
import { toIso } from '../../schema/time.js';
import type { LogReader } from '../../storage/index.js';

export interface Span {
  start: number;
  end: number | null;
  reason: GapReason;
}

export interface DatasetSpan {
  first_time: string;
  last_time: string;
  first_seq: number;
  last_seq: number;
}

export async function datasetSpan(reader: LogReader): Promise<DatasetSpan | null> {
  const [first, last] = await Promise.all([reader.first(), reader.latest()]);
  if (!first || !last) return null;
  return { first_time: toIso(first.rec.recv_ts), last_time: toIso(last.rec.recv_ts), first_seq: first.rec.seq, last_seq: last.rec.seq };
}

/**
 * The gaps of one books log, kept incrementally: each update reads only the records appended since
 * the last one (by seq), so a market's coverage costs one full scan, then only its growth.
 * Closed gap records are authoritative; an open one ends at the next full book.
 */
export class GapScanner {
  private lastSeq = -1;
  private readonly done: Span[] = [];
  private readonly open = new Map<string, Span>();

  async update(reader: LogReader): Promise<void> {
    const from = this.lastSeq < 0 ? 'start' : await reader.seekSeq(this.lastSeq + 1);
    if (from === null) return;
    for await (const { rec } of reader.read(from)) {
      this.lastSeq = rec.seq;
      if (rec.type === 'gap') {
        const k = `${rec.start_ts}|${rec.token_id ?? ''}`;
        if (rec.end_ts === null) {
          if (!this.open.has(k)) this.open.set(k, { start: rec.start_ts, end: null, reason: rec.reason });
        } else {
          this.open.delete(k);
          this.done.push({ start: rec.start_ts, end: rec.end_ts, reason: rec.reason });
        }
      } else if ((rec.type === 'book' || rec.type === 'book_checkpoint' || rec.type === 'yesno_book') && this.open.size > 0) {
        for (const g of this.open.values()) this.done.push({ ...g, end: Math.max(g.start, rec.recv_ts) });
        this.open.clear();
      }
    }
  }

  /** Gaps in start order, overlapping spans merged (a closed record may restate a span a book closed). */
  spans(): Span[] {
    const all = [...this.done, ...this.open.values()].sort((a, b) => a.start - b.start);
    const out: Span[] = [];
    for (const g of all) {
      const prev = out[out.length - 1];
      if (prev && (prev.end === null || g.start <= prev.end)) {
        if (prev.end !== null && (g.end === null || g.end > prev.end)) prev.end = g.end;
        continue;
      }
      out.push({ ...g });
    }
    return out;
  }

  weight(): number {
    return 1 + this.done.length + this.open.size;
  }
}

export interface MarketCoverage {
  readonly datasets: Record<'books' | 'metrics' | 'catalog', DatasetSpan | null>;
  readonly gaps: Span[];
}

export class CoverageCache {
  private readonly scanners = new LRUCache<string, GapScanner>({ maxSize: 1_000_000, sizeCalculation: (g) => g.weight() });

  /** Spans of every dataset; the books' gaps too when `withGaps` (incremental scan of the books log). */
  async get(family: Family, market: string, reader: (s: StreamName) => Promise<LogReader>, withGaps = true): Promise<MarketCoverage> {
    const books = await reader('books');
    const [b, m, c] = await Promise.all([datasetSpan(books), reader('metrics').then(datasetSpan), reader('catalog').then(datasetSpan)]);
    const datasets = { books: b, metrics: m, catalog: c };
    if (!withGaps || !b) return { datasets, gaps: [] };
    const key = `${family}|${market}`;
    let g = this.scanners.get(key);
    if (!g) this.scanners.set(key, (g = new GapScanner()));
    await g.update(books);
    this.scanners.set(key, g); // re-weigh
    return { datasets, gaps: g.spans() };
  }
}

/** Gaps and covered intervals of the books within [from, to). */
export function clipCoverage(gaps: Span[], from: number, to: number): { intervals: { start: string; end: string }[]; gaps: { start: string; end: string | null; reason: GapReason }[] } {
  const intervals: { start: string; end: string }[] = [];
  const outGaps: { start: string; end: string | null; reason: GapReason }[] = [];
  let cur = from;
  for (const g of gaps) {
    const gEnd = g.end ?? Infinity;
    // An open gap that starts where the recorded data ends (the feed was lost and nothing came since)
    // is the market's state now: it is listed, not clipped away as an empty span.
    if (gEnd <= from || g.start > to || (g.start === to && g.end !== null)) continue;
    const s = Math.max(g.start, from);
    if (s > cur) intervals.push({ start: toIso(cur), end: toIso(s) });
    outGaps.push({ start: toIso(s), end: g.end === null ? null : toIso(Math.min(gEnd, to)), reason: g.reason });
    cur = Math.max(cur, Math.min(gEnd, to));
  }
  if (cur < to) intervals.push({ start: toIso(cur), end: toIso(to) });
  return { intervals, gaps: outGaps };
}
