// What every family's book model is built from: the model itself (which records make snapshots, and
// their public shape), the book state a shape reads, and the small pieces the families' shapes share.
// Each family's shapes live in its own folder (src/families/<family>/shapes.ts); the REST pages, the
// stream and the replay call them through the family's descriptor with the same book state, so the
// stream sends "the snapshot object exactly as REST".

import type { TokenView } from './book-state.js';
import type { CoinMarket, WalletMarket } from '../schema/market.js';
import type { Level, Recorded } from '../schema/observation.js';

/** How one family turns records into snapshots. */
export interface BookModel {
  /** False when every snapshot record is a full book on its own (yes/no): no replay needed. */
  readonly replay: boolean;
  /** Type-level test: could this record produce a snapshot? */
  candidate(rec: Recorded): boolean;
  /** After applying: did it change a book this model serves? (`changed` = tokens MarketBooks reported) */
  produces(rec: Recorded, changed: readonly string[]): boolean;
  /** The public snapshot object, or null when there is no valid book to show. */
  shape(rec: Recorded, books: BookSource): Record<string, unknown> | null;
}

/** A page's resume position (a record seq and its companions), carried in a signed cursor by the API. */
export type CursorPos = Record<string, string | number | null>;

/** Anything that shows a token's current valid book: a live `MarketBooks` or a frozen copy. */
export interface BookSource {
  view(tokenId: string, depth?: number): TokenView | null;
}

/** Where a snapshot sits in its log: the record that produced it. */
export interface SnapshotPoint {
  readonly seq: number;
  readonly recv_ts: number;
  readonly source_ts: number | null;
}

export interface BookShapeOptions {
  /** Levels per side (default all). */
  readonly depth?: number;
  /** Without the book: identity and times only (coin: no `books`; wallet: no `bids`/`asks`). */
  readonly includeOrderbook?: boolean;
}

export type NumLevel = [number, number];

/** Decimal text levels → numbers, best first (the coin and wallet families serve numbers). */
export function numericLevels(levels: readonly Level[], depth?: number): NumLevel[] {
  const n = depth === undefined ? levels.length : Math.min(depth, levels.length);
  const out = new Array<NumLevel>(n);
  for (let i = 0; i < n; i++) out[i] = [Number(levels[i][0]), Number(levels[i][1])];
  return out;
}

/** Resolves an outcome label of a two-outcome market: its index, or -1 when unknown. */
export function outcomeIndex(market: CoinMarket | WalletMarket, label: string | undefined): number {
  if (label === undefined) return 0;
  return market.outcomes.findIndex((o) => o.label === label);
}
