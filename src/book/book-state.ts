// Order books of one market rebuilt from recorded observations: full books, deltas, checkpoints and
// gaps. The one implementation shared by recorders (live state, checkpoints), the read side
// (snapshots, as-of books), compaction and the stream, so every layer agrees level for level.
//
// Rules: a `book` replaces that token's book; a `book_checkpoint` replaces every book it lists; a
// `book_delta` applies only to a valid book (never to nothing: before a snapshot it is ignored); an
// open `gap` (end_ts null) invalidates the books it covers until their next full book.

import type { Ladder, Level, Observation } from '../schema/observation.js';

type Side = 'bid' | 'ask';

/** One token's book: price (as a number, so ".48" and "0.48" are one level) → [priceText, sizeText]. */
class TokenBook {
  readonly bids = new Map<number, Level>();
  readonly asks = new Map<number, Level>();
  private sortedBids: Level[] | null = null;
  private sortedAsks: Level[] | null = null;

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
    const map = side === 'bid' ? this.bids : this.asks;
    if (!(size > 0)) map.delete(price);
    else map.set(price, [priceText, sizeText]);
    if (side === 'bid') this.sortedBids = null;
    else this.sortedAsks = null;
  }

  /** Bids high → low, asks low → high (best first), optionally cut to `depth` levels. */
  view(depth?: number): { bids: Level[]; asks: Level[] } {
    if (!this.sortedBids) this.sortedBids = [...this.bids.entries()].sort((a, b) => b[0] - a[0]).map((e) => e[1]);
    if (!this.sortedAsks) this.sortedAsks = [...this.asks.entries()].sort((a, b) => a[0] - b[0]).map((e) => e[1]);
    return depth === undefined
      ? { bids: this.sortedBids, asks: this.sortedAsks }
      : { bids: this.sortedBids.slice(0, depth), asks: this.sortedAsks.slice(0, depth) };
  }
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
