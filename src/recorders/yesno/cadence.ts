// The yes/no book poll cadence: active markets share the REST rate budget, so each market's
// interval is (active markets ÷ book budget) and stretches as markets are added; markets are polled
// earliest-due first. No fixed tick is promised: the interval in force is recorded on every book.

export class PollCadence {
  private readonly due = new Map<string, number>();

  /**
   * @param ratePerS the upstream's whole REST budget (requests/s)
   * @param bookShare the part of it books may use; the rest is left to the catalogue
   */
  constructor(
    private readonly ratePerS: number,
    private readonly bookShare = 0.9,
  ) {}

  /** The per-market interval for `active` markets: they must fit in the book budget together. */
  intervalMs(active: number): number {
    const budget = this.ratePerS * this.bookShare;
    return Math.ceil((1000 * Math.max(1, active)) / budget);
  }

  /** Keeps the schedule to exactly `tickers`: new ones are due now, gone ones forgotten. */
  sync(tickers: Iterable<string>, now: number): void {
    const keep = new Set(tickers);
    for (const t of this.due.keys()) if (!keep.has(t)) this.due.delete(t);
    for (const t of keep) if (!this.due.has(t)) this.due.set(t, now);
  }

  /** The earliest-due market and how long until it is due (≤ 0: now), or null when none. */
  next(now: number): { ticker: string; waitMs: number } | null {
    let best: string | null = null;
    let at = Infinity;
    for (const [t, d] of this.due) {
      if (d < at) {
        at = d;
        best = t;
      }
    }
    return best === null ? null : { ticker: best, waitMs: at - now };
  }

  /** Marks `ticker` polled at `now`: next due one interval later. */
  polled(ticker: string, now: number, intervalMs: number): void {
    if (this.due.has(ticker)) this.due.set(ticker, now + intervalMs);
  }

  get size(): number {
    return this.due.size;
  }
}
