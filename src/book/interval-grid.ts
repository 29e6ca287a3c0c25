// The `interval` snapshot rules, in one place: which buckets of a fixed grid may hold a book. The
// API's `/snapshots?interval=` (families/coin/intervals.ts), the replay's `book_snapshot_<d>_<i>` lines
// and the `book_snapshots` dataset all drive this one grid, so they cannot disagree.
//
// A bucket [start, start + I) is served only when the books were valid at its start (records at
// exactly the start count before it), never broke inside it, are valid at its end, and no gap
// record says they were untrustworthy during it. A gap is written when a loss is noticed, which can
// be long after it began (a recorder restarted after kill -9 writes its `not_recording` gap from
// the last record it had kept): the buckets from the gap's `start_ts` on are not served either.
// A gap noticed while later records were already applied (a `sequence_gap`) is met only after the
// grid decided its first buckets: the caller reads ahead and passes a GapLookahead
// (book/gap-lookahead.ts, where the whole rule is stated).
//
// Push style: the caller replays the records in receive-time order and calls `advance(t)` before
// applying each (t = its receive time), `noteApplied` after, and `advance(stop)` at the end.

import type { GapReason } from '../schema/observation.js';
import type { GapLookahead } from './gap-lookahead.js';

/** The grid sizes `interval` and the replay's `book_snapshot_<d>_<i>` lines may name. */
export const INTERVAL_MS: Readonly<Record<string, number>> = { '1s': 1000, '1m': 60_000, '5m': 300_000, '1h': 3_600_000 };

/** What the grid needs of a market's books. */
export interface GridBooks {
  /** Receive time since which the books have been valid without a break, or null while invalid. */
  readonly validSince: number | null;
  valid(): boolean;
}

export interface GridListener {
  /** Bucket [start, start + I) holds a book. Return false to take it later: the grid stops before it. */
  served(start: number): boolean | void;
  /**
   * Buckets [from, to) hold none; `spoiled`: a gap record written after the fact says so (`reason`:
   * its reason, when it was read ahead rather than being the record about to be applied).
   */
  unserved?(from: number, to: number, spoiled: boolean, reason?: GapReason): void;
}

/** The grid's bucket boundaries: a time rounded down or up to a multiple of the interval. */
export const alignDown = (t: number, i: number): number => Math.floor(t / i) * i;
export const alignUp = (t: number, i: number): number => Math.ceil(t / i) * i;

export class IntervalGrid {
  private start: number;
  private pendingStart = true;
  private okAtStart = false;
  private broke = false;
  private stopped = false;

  /** `start`: the first bucket's start, on the grid; no bucket ending after `stop` is decided. */
  /** `ahead`: the back-dated gaps read ahead of the records applied (see book/gap-lookahead.ts). */
  constructor(
    private readonly intervalMs: number,
    start: number,
    private readonly stop: number,
    private readonly on: GridListener,
    private readonly ahead?: GapLookahead,
  ) {
    this.start = start;
  }

  /** The start of the first bucket not decided yet (where a stopped page resumes). */
  get position(): number {
    return this.start;
  }

  /** No bucket is left to decide (the grid reached `stop`, or the listener stopped it). */
  get done(): boolean {
    return this.stopped || this.start + this.intervalMs > this.stop;
  }

  /**
   * Decides every bucket that ends at or before `t`. Call it before applying a record received at
   * t, with `spoiledFrom` = that record's `start_ts` when it is a gap: the books were not to be
   * trusted since then, whatever the records before it said.
   */
  advance(t: number, books: GridBooks, spoiledFrom = Infinity): void {
    const I = this.intervalMs;
    while (!this.done) {
      if (this.pendingStart) {
        if (t <= this.start) return;
        this.okAtStart = books.validSince !== null && books.validSince <= this.start;
        this.broke = false;
        this.pendingStart = false;
        // Invalid (or spoiled) from this start with no record before t: every bucket up to t's is
        // unserved alike; decide them at once rather than one by one.
        if ((!this.okAtStart && !books.valid()) || spoiledFrom <= this.start) {
          const to = Math.min(alignDown(t, I), alignDown(this.stop - this.start, I) + this.start);
          if (to > this.start) {
            this.on.unserved?.(this.start, to, spoiledFrom <= this.start);
            this.start = to;
            this.pendingStart = true;
            continue;
          }
        }
      }
      const end = this.start + I;
      if (t < end) return;
      const spoiled = spoiledFrom < end;
      const later = spoiled ? null : (this.ahead?.spoiler(this.start, end) ?? null);
      if (this.okAtStart && !this.broke && !spoiled && later === null && books.valid()) {
        if (this.on.served(this.start) === false) {
          this.stopped = true;
          return;
        }
      } else if (later !== null) this.on.unserved?.(this.start, end, true, later);
      else this.on.unserved?.(this.start, end, spoiled);
      this.start = end;
      this.pendingStart = true;
    }
  }

  /** After a record was applied: losing validity inside a bucket spoils it. */
  noteApplied(wasValid: boolean, books: GridBooks): void {
    if (!this.pendingStart && wasValid && !books.valid()) this.broke = true;
  }
}
