// Order books of one market rebuilt from recorded observations: full books, deltas, checkpoints and
// gaps. The one implementation shared by recorders (live state, checkpoints), the read side
// (snapshots, as-of books), compaction and the stream, so every layer agrees level for level.
//
// Rules: a `book` replaces that token's book; a `book_checkpoint` replaces every book it lists; a
// `book_delta` applies only to a valid book (never to nothing: before a snapshot it is ignored); an
// open `gap` (end_ts null) invalidates the books it covers until their next full book.

import type { Ladder, Level, Observation } from '../schema/observation.js';

type Side = 'bid' | 'ask';

/**
 * One token's book: price (as a number, so ".48" and "0.48" are one level) → [priceText, sizeText],
 * and each side's levels best first, kept sorted as levels change.
 */
class TokenBook {
  readonly bids = new Map<number, Level>();
  readonly asks = new Map<number, Level>();
  // Each side best first, with its prices as numbers beside it; null until first asked for. A change
  // makes new arrays (copy and splice: a delta moves one level of fifty, where sorting the whole side
  // again was the largest JavaScript item in the book_snapshots thread's profile). An array handed
  // out is never written again, so callers may keep it and compare by identity: a side's array is
  // new exactly when that side changed.
  private sortedBids: Level[] | null = null;
  private sortedAsks: Level[] | null = null;
  private bidPrices: number[] | null = null;
  private askPrices: number[] | null = null;

  static from(bids: Ladder, asks: Ladder): TokenBook {
    const b = new TokenBook();
    for (const l of bids) b.set('bid', l[0], l[1]);
    for (const l of asks) b.set('ask', l[0], l[1]);
    return b;
  }

  set(side: Side, priceText: string, sizeText: string): void {
    const price = Number(priceText);
    const size = Number(sizeText);
    if (!Number.isFinite(price)) return;
    const bid = side === 'bid';
    const map = bid ? this.bids : this.asks;
    const level: Level | null = size > 0 ? [priceText, sizeText] : null;
    if (level === null) {
      if (!map.delete(price)) return; // no such level: the book is unchanged
    } else map.set(price, level);
    const levels = bid ? this.sortedBids : this.sortedAsks;
    const prices = bid ? this.bidPrices : this.askPrices;
    if (levels === null || prices === null) return; // sorted when first asked for
    // Where `price` is or would go: bids high → low, asks low → high.
    let lo = 0;
    let hi = prices.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (bid ? prices[mid] > price : prices[mid] < price) lo = mid + 1;
      else hi = mid;
    }
    const found = lo < prices.length && prices[lo] === price;
    const nextLevels = levels.slice();
    const nextPrices = found && level !== null ? prices : prices.slice();
    if (level === null) {
      nextLevels.splice(lo, 1);
      nextPrices.splice(lo, 1);
    } else if (found) nextLevels[lo] = level;
    else {
      nextLevels.splice(lo, 0, level);
      nextPrices.splice(lo, 0, price);
    }
    if (bid) {
      this.sortedBids = nextLevels;
      this.bidPrices = nextPrices;
    } else {
      this.sortedAsks = nextLevels;
      this.askPrices = nextPrices;
    }
  }

  /** Bids high → low, asks low → high (best first), optionally cut to `depth` levels. */
  view(depth?: number): { bids: Level[]; asks: Level[] } {
    if (!this.sortedBids) [this.sortedBids, this.bidPrices] = sortedSide(this.bids, -1);
    if (!this.sortedAsks) [this.sortedAsks, this.askPrices] = sortedSide(this.asks, 1);
    return depth === undefined
      ? { bids: this.sortedBids, asks: this.sortedAsks }
      : { bids: this.sortedBids.slice(0, depth), asks: this.sortedAsks.slice(0, depth) };
  }
}

/** A side's levels and prices sorted by price, ascending (`dir` 1) or descending (-1). */
function sortedSide(map: ReadonlyMap<number, Level>, dir: 1 | -1): [Level[], number[]] {
  const prices = Float64Array.from(map.keys()).sort(); // numeric, ascending
  if (dir === -1) prices.reverse();
  const out = Array.from(prices);
  return [out.map((p) => map.get(p)!), out];
}

export interface TokenView {
  readonly token_id: string;
  readonly bids: readonly Level[];
  readonly asks: readonly Level[];
}

export class MarketBooks {
  private readonly books = new Map<string, TokenBook>();
  private readonly invalid = new Set<string>();
  /** Deltas seen for a token without a valid book (ignored, counted for diagnostics). */
  droppedDeltas = 0;

  /**
   * Applies one observation. Returns the token ids whose visible book changed (empty when the
   * observation changed nothing, e.g. a trade, or a delta for an invalid book).
   */
  apply(obs: Observation): string[] {
    switch (obs.type) {
      case 'book':
        this.books.set(obs.token_id, TokenBook.from(obs.bids, obs.asks));
        this.invalid.delete(obs.token_id);
        return [obs.token_id];
      case 'book_checkpoint':
        for (const b of obs.books) {
          this.books.set(b.token_id, TokenBook.from(b.bids, b.asks));
          this.invalid.delete(b.token_id);
        }
        return obs.books.map((b) => b.token_id);
      case 'book_delta': {
        const book = this.books.get(obs.token_id);
        if (!book || this.invalid.has(obs.token_id)) {
          this.droppedDeltas++;
          return [];
        }
        for (const c of obs.changes) book.set(c.side, c.price, c.size);
        return [obs.token_id];
      }
      case 'gap': {
        if (obs.end_ts !== null) return [];
        const hit = obs.token_id !== undefined ? [obs.token_id] : [...this.books.keys()];
        for (const t of hit) this.invalid.add(t);
        return hit;
      }
      default:
        return [];
    }
  }

  /** True when the token has a book received since its last invalidation. */
  isValid(tokenId: string): boolean {
    return this.books.has(tokenId) && !this.invalid.has(tokenId);
  }

  /** All tokens with a valid book. */
  validTokens(): string[] {
    return [...this.books.keys()].filter((t) => !this.invalid.has(t));
  }

  /** The token's book best first, or null when it has none or it is invalid (never a stale book). */
  view(tokenId: string, depth?: number): TokenView | null {
    if (!this.isValid(tokenId)) return null;
    const v = this.books.get(tokenId)!.view(depth);
    return { token_id: tokenId, bids: v.bids, asks: v.asks };
  }

  /** Every valid book, for a checkpoint record. */
  checkpointBooks(): TokenView[] {
    return this.validTokens().map((t) => this.view(t)!);
  }

  clear(): void {
    this.books.clear();
    this.invalid.clear();
  }
}

/** The mirror of a book priced in the other outcome: sides swapped, price 1 − p (decimal units). */
export function mirrorLevels(bids: readonly Level[], asks: readonly Level[]): { bids: Level[]; asks: Level[] } {
  const flip = (l: Level): Level => [complement(l[0]), l[1]];
  // The other outcome's bids are this book's asks at 1 − p (best ask → best bid), and vice versa.
  return { bids: asks.map(flip), asks: bids.map(flip) };
}

/** 1 − p computed on decimal text without binary noise ("0.53" → "0.47"). */
export function complement(priceText: string): string {
  const frac = priceText.includes('.') ? priceText.split('.')[1].length : 0;
  const scale = 10 ** Math.min(frac, 12);
  const v = Math.round((1 - Number(priceText)) * scale) / scale;
  return v.toFixed(Math.min(frac, 12)).replace(/^0(?=\.)/, '0');
}
