// Which recorder a merged market-day takes each interval from: pure interval arithmetic over the
// recorders' covered intervals (the times each held a valid book). One source is kept as long as
// it covers; where it stops, the first recorder (in priority order) that covers the instant takes
// over; where none covers, the merged day has a gap. So the merged gaps are exactly the
// intersection of the recorders' uncovered times, and each switch happens at an instant the new
// source held a whole book.

import type { GapReason } from '../../schema/observation.js';

/** [start, end) in epoch ms. */
export interface Interval {
  readonly start: number;
  readonly end: number;
}

/** A gap span of one recorder (end exclusive; a span still open at the day's end ends there). */
export interface GapSpan extends Interval {
  readonly reason: GapReason;
}

/** What one recorder holds of one market-day. */
export interface RecorderCoverage {
  readonly id: string;
  /** Sorted, disjoint, non-empty. */
  readonly covered: readonly Interval[];
  readonly gaps: readonly GapSpan[];
}

/** One interval of the merged day: a recorder's, or a gap (source null) with the reason to name. */
export interface Segment extends Interval {
  readonly source: string | null;
  readonly reason?: GapReason;
}

/**
 * The covered intervals of a recorder: [firstValid, lastEnd) minus its gap spans. `lastEnd` is
 * exclusive (a recorder's last record + 1 ms, or the day's end when its log goes on).
 */
export function coveredIntervals(firstValid: number | null, lastEnd: number, gaps: readonly Interval[]): Interval[] {
  if (firstValid === null || firstValid >= lastEnd) return [];
  const out: Interval[] = [];
  let cur = firstValid;
  for (const g of [...gaps].sort((a, b) => a.start - b.start)) {
    if (g.end <= cur) continue;
    if (g.start >= lastEnd) break;
    if (g.start > cur) out.push({ start: cur, end: g.start });
    cur = Math.max(cur, g.end);
    if (cur >= lastEnd) break;
  }
  if (cur < lastEnd) out.push({ start: cur, end: lastEnd });
  return out;
}

const containing = (iv: readonly Interval[], t: number): Interval | undefined => iv.find((i) => i.start <= t && t < i.end);

/** The merged day's segments, in time order, adjacent ones of one source joined. */
export function planSegments(recorders: readonly RecorderCoverage[]): Segment[] {
  const all = recorders.flatMap((r) => r.covered);
  if (all.length === 0) return [];
  let t = Math.min(...all.map((i) => i.start));
  const end = Math.max(...all.map((i) => i.end));
  const out: Segment[] = [];
  let cur: RecorderCoverage | null = null;
  while (t < end) {
    let iv = cur ? containing(cur.covered, t) : undefined;
    if (!iv) {
      cur = null;
      for (const r of recorders) {
        iv = containing(r.covered, t);
        if (iv) {
          cur = r;
          break;
        }
      }
    }
    if (cur && iv) {
      push(out, { start: t, end: iv.end, source: cur.id });
      t = iv.end;
      continue;
    }
    // Nobody covers t: a gap until the first instant somebody does.
    const next = Math.min(...all.filter((i) => i.start > t).map((i) => i.start));
    push(out, { start: t, end: next, source: null, reason: reasonAt(recorders, t) });
    t = next;
  }
  return out;
}

function push(out: Segment[], s: Segment): void {
  const prev = out[out.length - 1];
  if (prev && prev.source === s.source && prev.end === s.start) out[out.length - 1] = { ...prev, end: s.end };
  else out.push(s);
}

/** The reason of the first recorder's gap at t (in priority order), else `not_recording`. */
function reasonAt(recorders: readonly RecorderCoverage[], t: number): GapReason {
  for (const r of recorders) {
    const g = r.gaps.find((x) => x.start <= t && t < x.end);
    if (g) return g.reason;
  }
  return 'not_recording';
}

/** The source of the segment holding t (null in a gap or outside the merged day). */
export function sourceAt(segments: readonly Segment[], t: number): string | null {
  let lo = 0,
    hi = segments.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const s = segments[mid];
    if (t < s.start) hi = mid - 1;
    else if (t >= s.end) lo = mid + 1;
    else return s.source;
  }
  return null;
}

/** The gap intervals of a merged plan. */
export const mergedGaps = (segments: readonly Segment[]): Interval[] =>
  segments.filter((s) => s.source === null).map((s) => ({ start: s.start, end: s.end }));
