// One Tardis book (a symbol's L2 book) kept while a day's `book_changes` rows stream past, and the
// rows it writes in Tardis's CSV conventions: `incremental_book_L2` (is_snapshot, side, price,
// amount; amount 0 removes the level), `book_snapshot_25` and `quotes` (written only when what they
// show changed). Prices are keyed by their unscaled integer at one scale per file, so a level is one
// Map entry and its text is built once per distinct price.

/** Levels of one side: unscaled price → size text. */
export type Side = Map<number, string>;

export interface Levels {
  readonly bids: Side;
  readonly asks: Side;
}

/** A decimal's text from its unscaled integer (no trailing zeros, `0.48` not `.48`). */
export function decimalText(unscaled: number, scale: number): string {
  const unit = 10 ** scale;
  const neg = unscaled < 0;
  const u = neg ? -unscaled : unscaled;
  const int = Math.floor(u / unit);
  let frac = u - int * unit;
  const sign = neg ? '-' : '';
  if (frac === 0) return `${sign}${int}`;
  let digits = scale;
  while (frac % 10 === 0) {
    frac /= 10;
    digits--;
  }
  return `${sign}${int}.${String(frac).padStart(digits, '0')}`;
}

/** The rows one record makes for a symbol's `incremental_book_L2` (after the four leading columns). */
export type L2Row = [isSnapshot: boolean, side: 'bid' | 'ask', priceKey: number, amount: string];

export class TardisBook {
  bids: Side = new Map();
  asks: Side = new Map();
  /** The kind of the last rows written: a full book written as `is_snapshot=true` rows, or updates. */
  private last: 'none' | 'snapshot' | 'update' = 'none';
  private lastTop = '';
  private lastQuote = '';

  /**
   * A full book replaces the state. A Tardis reader resets its book only where `is_snapshot` turns
   * from false to true, so a full book right after another one (back to back, or a recorder
   * checkpoint repeating the book) is written as the updates that turn the old book into the new
   * one; so is an empty book (no rows could say it). Either way the reader's book equals ours.
   */
  full(next: Levels, venueSnapshot: boolean, out: L2Row[]): Levels {
    const asSnapshot = this.last !== 'snapshot' && (venueSnapshot || this.last === 'none') && (next.bids.size > 0 || next.asks.size > 0);
    if (asSnapshot) {
      for (const [p, s] of next.bids) out.push([true, 'bid', p, s]);
      for (const [p, s] of next.asks) out.push([true, 'ask', p, s]);
      this.last = 'snapshot';
    } else {
      const n = out.length;
      diff(this.bids, next.bids, 'bid', out);
      diff(this.asks, next.asks, 'ask', out);
      if (out.length > n) this.last = 'update';
    }
    // `next` becomes the book; the old maps go back to the caller, cleared, for its next full book.
    const old = { bids: this.bids, asks: this.asks };
    this.bids = next.bids;
    this.asks = next.asks;
    old.bids.clear();
    old.asks.clear();
    return old;
  }

  /** One level's new size (`0` removes it). */
  update(side: 'bid' | 'ask', price: number, size: string, zero: boolean, out: L2Row[]): void {
    const book = side === 'bid' ? this.bids : this.asks;
    if (zero) book.delete(price);
    else book.set(price, size);
    out.push([false, side, price, size]);
    this.last = 'update';
  }

  /** The `book_snapshot_25` cells (asks[0].price, asks[0].amount, bids[0].price, ...), or null when unchanged. */
  top(depth: number, price: (k: number) => string): string | null {
    const a = [...this.asks.keys()].sort((x, y) => x - y).slice(0, depth);
    const b = [...this.bids.keys()].sort((x, y) => y - x).slice(0, depth);
    const cells: string[] = [];
    for (let i = 0; i < depth; i++) {
      cells.push(i < a.length ? price(a[i]) : '', i < a.length ? this.asks.get(a[i])! : '');
      cells.push(i < b.length ? price(b[i]) : '', i < b.length ? this.bids.get(b[i])! : '');
    }
    const line = cells.join(',');
    if (line === this.lastTop) return null;
    this.lastTop = line;
    return line;
  }

  /** The `quotes` cells (ask_amount, ask_price, bid_price, bid_amount), or null when unchanged. */
  quote(price: (k: number) => string): string | null {
    let a = Infinity,
      b = -Infinity;
    for (const k of this.asks.keys()) if (k < a) a = k;
    for (const k of this.bids.keys()) if (k > b) b = k;
    const ask = a === Infinity ? ',' : `${this.asks.get(a)!},${price(a)}`;
    const bid = b === -Infinity ? ',' : `${price(b)},${this.bids.get(b)!}`;
    const line = `${ask},${bid}`;
    if (line === this.lastQuote) return null;
    this.lastQuote = line;
    return line;
  }
}

function diff(old: Side, next: Side, side: 'bid' | 'ask', out: L2Row[]): void {
  for (const p of old.keys()) if (!next.has(p)) out.push([false, side, p, '0']);
  for (const [p, s] of next) if (old.get(p) !== s) out.push([false, side, p, s]);
}
