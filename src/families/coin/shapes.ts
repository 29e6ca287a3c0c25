// The coin family's public JSON shapes (API.md §5): its market record and its snapshot object, built
// from a stored market and the book state after a record (the REST pages, the stream, the replay and
// the interval pages all call these).

import { numericLevels, type BookShapeOptions, type BookSource, type NumLevel, type SnapshotPoint } from '../../book/book-model.js';
import type { CoinMarket } from '../../schema/market.js';
import { toIso, toIsoOrNull } from '../../schema/time.js';

/**
 * A coin-family snapshot: every valid outcome book of the market in catalogue order (an
 * invalidated book is left out, never served stale). Null when no outcome has a valid book.
 */
export function coinSnapshot(
  market: CoinMarket,
  at: SnapshotPoint,
  books: BookSource,
  opts: BookShapeOptions = {},
): Record<string, unknown> | null {
  const list: { outcome: string; token_id: string; bids: NumLevel[]; asks: NumLevel[] }[] = [];
  for (const o of market.outcomes) {
    const v = books.view(o.token_id, opts.depth);
    if (v) list.push({ outcome: o.label, token_id: o.token_id, bids: numericLevels(v.bids), asks: numericLevels(v.asks) });
  }
  if (list.length === 0) return null;
  const snap: Record<string, unknown> = {
    market_id: market.market_id,
    source_time: toIsoOrNull(at.source_ts),
    receive_time: toIso(at.recv_ts),
    seq: at.seq,
  };
  if (opts.includeOrderbook) snap.books = list;
  return snap;
}

/** The coin-family market record of API.md §5. */
export function coinMarketRecord(m: CoinMarket): Record<string, unknown> {
  return {
    market_id: m.market_id,
    event_id: m.event_id,
    condition_id: m.condition_id,
    question: m.question,
    outcomes: m.outcomes.map((o) => ({ label: o.label, token_id: o.token_id })),
    start_time: toIsoOrNull(m.start_time),
    end_time: toIsoOrNull(m.end_time),
    status: m.status,
    native: m.native ?? null,
  };
}
