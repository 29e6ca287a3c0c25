// The public JSON shapes of API.md, built from stored records: market records and snapshot objects.
// Exported for the live stream, which must send "the snapshot object exactly as REST": call the same
// function with the same book state (a `MarketBooks` after applying the record) and the record.

import type { TokenView } from './book-state.js';
import { mirrorLevels } from './book-state.js';
import type { CoinMarket, WalletMarket, YesNoMarket } from '../schema/market.js';
import type { Level, Recorded, YesNoBook } from '../schema/observation.js';
import { toIso, toIsoOrNull } from '../schema/time.js';

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

/**
 * A coin-family snapshot: every valid outcome book of the market in catalogue order (an
 * invalidated book is left out, never served stale). Null when no outcome has a valid book.
 */
export function coinSnapshot(market: CoinMarket, at: SnapshotPoint, books: BookSource, opts: BookShapeOptions = {}): Record<string, unknown> | null {
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

/** Resolves an outcome label of a two-outcome market: its index, or -1 when unknown. */
export function outcomeIndex(market: CoinMarket | WalletMarket, label: string | undefined): number {
  if (label === undefined) return 0;
  return market.outcomes.findIndex((o) => o.label === label);
}

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

/** Most levels a yes/no side ever serves (the venue's own maximum). */
export const YESNO_MAX_DEPTH = 100;

/** A yes/no snapshot straight from one stored book: native text and units, never converted. */
export function yesnoSnapshot(ticker: string, rec: Recorded<YesNoBook>, opts: BookShapeOptions = {}): Record<string, unknown> {
  const depth = Math.min(opts.depth ?? YESNO_MAX_DEPTH, YESNO_MAX_DEPTH);
  const side = (l: readonly Level[]): { prices: string[]; sizes: string[] } => {
    const cut = l.slice(0, depth);
    return { prices: cut.map((x) => x[0]), sizes: cut.map((x) => x[1]) };
  };
  const snap: Record<string, unknown> = {
    ticker,
    observed_time: toIso(rec.source_ts ?? rec.recv_ts),
    receive_time: toIso(rec.recv_ts),
    seq: rec.seq,
    units: rec.units,
  };
  if (opts.includeOrderbook) {
    snap.yes = side(rec.yes);
    snap.no = side(rec.no);
  }
  snap.levels = { yes: Math.min(rec.yes.length, YESNO_MAX_DEPTH), no: Math.min(rec.no.length, YESNO_MAX_DEPTH) };
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

/** The yes/no market record of API.md §4. */
export function yesnoMarketRecord(m: YesNoMarket): Record<string, unknown> {
  return {
    ticker: m.ticker,
    event_ticker: m.event_ticker,
    series_ticker: m.series_ticker,
    title: m.title,
    status: m.status,
    open_time: toIsoOrNull(m.open_time),
    close_time: toIsoOrNull(m.close_time),
    result: m.result,
    native: m.native ?? null,
  };
}
