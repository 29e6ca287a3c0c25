// The wallet-prediction family's public JSON shapes (API.md §3): its market record and the snapshot
// of one outcome (the stored book is the first outcome's; others are its mirror).

import { mirrorLevels } from '../../book/book-state.js';
import { numericLevels, outcomeIndex, type BookShapeOptions, type BookSource, type SnapshotPoint } from '../../book/book-model.js';
import type { WalletMarket } from '../../schema/market.js';
import { toIso, toIsoOrNull } from '../../schema/time.js';

/**
 * A wallet-family snapshot of one outcome. The stored book is priced in the first outcome; any
 * other outcome is its mirror (sides swapped, 1 − p), derived here. Null when the book is invalid.
 */
export function walletSnapshot(
  market: WalletMarket,
  at: SnapshotPoint,
  books: BookSource,
  opts: BookShapeOptions & { readonly outcome?: string } = {},
): Record<string, unknown> | null {
  const idx = Math.max(0, outcomeIndex(market, opts.outcome));
  const first = market.outcomes[0];
  if (!first) return null;
  const v = books.view(first.token_id);
  if (!v) return null;
  const o = market.outcomes[idx];
  const snap: Record<string, unknown> = {
    market_id: market.market_id,
    outcome: o.label,
    token_id: o.token_id,
    source_time: toIsoOrNull(at.source_ts),
    receive_time: toIso(at.recv_ts),
    seq: at.seq,
  };
  if (opts.includeOrderbook !== false) {
    const side = idx === 0 ? v : mirrorLevels(v.bids, v.asks);
    snap.bids = numericLevels(side.bids, opts.depth);
    snap.asks = numericLevels(side.asks, opts.depth);
  }
  return snap;
}

/** The wallet-prediction market record of API.md §3. */
export function walletMarketRecord(m: WalletMarket): Record<string, unknown> {
  return {
    topic_id: m.topic_id,
    market_id: m.market_id,
    condition_id: m.condition_id,
    outcomes: m.outcomes.map((o) => ({ label: o.label, token_id: o.token_id })),
    coin: m.coin,
    window: m.window,
    start_time: toIsoOrNull(m.start_time),
    end_time: toIsoOrNull(m.end_time),
    created_time: toIsoOrNull(m.created_time),
    updated_time: toIsoOrNull(m.updated_time),
    status: m.status,
    resolution: m.resolution,
    winning_outcome: m.winning_outcome,
    resolved_time: toIsoOrNull(m.resolved_time),
    volume: m.volume,
    liquidity: m.liquidity,
    participants: m.participants,
    chain: m.chain ? { chain_id: m.chain.chain_id, exchange_contract: m.chain.exchange_contract } : null,
  };
}
