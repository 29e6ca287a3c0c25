// Ordering of the wallet venue's full-snapshot books. Delivery is at-most-once and unordered, so a
// push older than (or equal to) the newest book already kept for its market is dropped: the version
// decides when both have one, else the venue's update time. REST snapshots pass the same gate.

export interface BookStamp {
  readonly version: number | null;
  readonly ts: number | null;
}

export class VersionGate {
  private readonly newest = new Map<string, BookStamp>();

  /** True (and remembered as newest) when this book is newer than anything kept for the market. */
  accept(market: string, stamp: BookStamp): boolean {
    const prev = this.newest.get(market);
    if (prev && !isNewer(stamp, prev)) return false;
    this.newest.set(market, stamp);
    return true;
  }

  /** Starts from what the log already holds (after a restart). */
  seed(market: string, stamp: BookStamp): void {
    this.newest.set(market, stamp);
  }

  forget(market: string): void {
    this.newest.delete(market);
  }
}

function isNewer(a: BookStamp, b: BookStamp): boolean {
  if (a.version !== null && b.version !== null) return a.version > b.version;
  if (a.ts !== null && b.ts !== null) return a.ts > b.ts;
  return true; // nothing to compare by: keep it (never drop a book on missing metadata)
}
