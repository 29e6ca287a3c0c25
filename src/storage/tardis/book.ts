// One Tardis book (a symbol's L2 book) kept while a day's `book_changes` rows stream past, and the
// rows it writes in Tardis's CSV conventions: `incremental_book_L2` (is_snapshot, side, price,
// amount; amount 0 removes the level), `book_snapshot_25` and `quotes` (written only when what they
// show changed). Prices are keyed by their unscaled integer at one scale per file, so a level is one
// Map entry; a size is its unscaled integer too (the few that are not, beyond 2^53 or null, are
// their text), and the rows a record makes are kept in reused typed arrays: neither a string nor an
// array is made per row, and the texts are written from the numbers (text-out.ts).

import { LevelMap } from './levels.js';

/**
 * A level's size: a number for an unscaled integer below 2^53 (`compact`), or the text of one that
 * is not. Equal sizes are equal Amounts, so the book compares them with `!==`.
 */
export type Amount = number | string;

/**
 * An unscaled size as the number the book keeps: a multiple of `div` (sizes of a few decimals) as
 * the small negative integer -(u / div) - 1, any other as itself. Map values and arguments that are
 * small integers are not boxed; the sizes of a busy day, at 10^8 per unit, were millions of boxed
 * numbers for the collector.
 */
export function compact(u: number, div: number): number {
  const q = Math.round(u / div);
  return q * div === u && q < 0x3fffffff ? -q - 1 : u;
}

/** The unscaled size a `compact` number stands for. */
export const unscaled = (a: number, div: number): number => (a < 0 ? (-a - 1) * div : a);

/** Levels of one side: unscaled price → size, in insertion order (levels.ts). */
export type Side = LevelMap<Amount>;

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

/** A row's `is_snapshot` and `side` cells as one code: +1 for a snapshot row, +2 for an ask. */
export const SNAPSHOT = 1;
export const ASK = 2;

/**
 * The rows one record makes for a symbol's `incremental_book_L2` (after the four leading columns):
 * row r is `kind[r]` (SNAPSHOT | ASK bits), `price[r]` and `amount[r]` (unscaled), or `texts[r]`
 * where the amount is a text (`amount[r]` is then -1; unscaled sizes are never negative).
 */
export class L2Rows {
  /** `compact`'s divisor of the amounts pushed. */
  constructor(private readonly div: number) {}

  length = 0;
  kind = new Uint8Array(256);
  price = new Float64Array(256);
  amount = new Float64Array(256);
  texts: string[] = [];

  push(kind: number, price: number, amount: Amount): void {
    if (this.length === this.kind.length) this.grow();
    const r = this.length++;
    this.kind[r] = kind;
    this.price[r] = price;
    if (typeof amount === 'number') this.amount[r] = amount < 0 ? (-amount - 1) * this.div : amount;
    else {
      this.amount[r] = -1;
      this.texts[r] = amount;
    }
  }

  clear(): void {
    this.length = 0;
  }

  private grow(): void {
    const n = this.kind.length * 2;
    const kind = new Uint8Array(n),
      price = new Float64Array(n),
      amount = new Float64Array(n);
    kind.set(this.kind);
    price.set(this.price);
    amount.set(this.amount);
    this.kind = kind;
    this.price = price;
    this.amount = amount;
  }
}

export class TardisBook {
  bids: Side = new LevelMap();
  asks: Side = new LevelMap();
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
  full(next: Levels, venueSnapshot: boolean, out: L2Rows): Levels {
    const asSnapshot = this.last !== 'snapshot' && (venueSnapshot || this.last === 'none') && (next.bids.size > 0 || next.asks.size > 0);
    if (asSnapshot) {
      next.bids.forEach((s, p) => out.push(SNAPSHOT, p, s));
      next.asks.forEach((s, p) => out.push(SNAPSHOT | ASK, p, s));
      this.last = 'snapshot';
    } else {
      const n = out.length;
      diff(this.bids, next.bids, 0, out);
      diff(this.asks, next.asks, ASK, out);
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
  update(side: 'bid' | 'ask', price: number, size: Amount, zero: boolean, out: L2Rows): void {
    const book = side === 'bid' ? this.bids : this.asks;
    if (zero) book.delete(price);
    else book.set(price, size);
    out.push(side === 'bid' ? 0 : ASK, price, size);
    this.last = 'update';
  }

  /** The `book_snapshot_25` cells (asks[0].price, asks[0].amount, bids[0].price, ...), or null when unchanged. */
  top(depth: number, price: (k: number) => string, amount: (a: Amount) => string): string | null {
    const a = [...this.asks.keys()].sort((x, y) => x - y).slice(0, depth);
    const b = [...this.bids.keys()].sort((x, y) => y - x).slice(0, depth);
    const cells: string[] = [];
    for (let i = 0; i < depth; i++) {
      cells.push(i < a.length ? price(a[i]) : '', i < a.length ? amount(this.asks.get(a[i])!) : '');
      cells.push(i < b.length ? price(b[i]) : '', i < b.length ? amount(this.bids.get(b[i])!) : '');
    }
    const line = cells.join(',');
    if (line === this.lastTop) return null;
    this.lastTop = line;
    return line;
  }

  /** The `quotes` cells (ask_amount, ask_price, bid_price, bid_amount), or null when unchanged. */
  quote(price: (k: number) => string, amount: (a: Amount) => string): string | null {
    let a = Infinity,
      b = -Infinity;
    for (const k of this.asks.keys()) if (k < a) a = k;
    for (const k of this.bids.keys()) if (k > b) b = k;
    const ask = a === Infinity ? ',' : `${amount(this.asks.get(a)!)},${price(a)}`;
    const bid = b === -Infinity ? ',' : `${price(b)},${amount(this.bids.get(b)!)}`;
    const line = `${ask},${bid}`;
    if (line === this.lastQuote) return null;
    this.lastQuote = line;
    return line;
  }
}

// forEach, not for…of: an entry iterator makes a [key, value] array per level.
function diff(old: Side, next: Side, kind: number, out: L2Rows): void {
  old.forEach((_, p) => {
    if (!next.has(p)) out.push(kind, p, 0);
  });
  next.forEach((s, p) => {
    if (old.get(p) !== s) out.push(kind, p, s);
  });
}
