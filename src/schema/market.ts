// Normalized market catalogue entries, one shape per route family. A market keeps every identifier
// and outcome label for its whole life (also after expiry), plus `native`: the upstream object as
// last received, so nothing the venue said is lost. Times are epoch ms or null.

export type MarketStatus = 'upcoming' | 'open' | 'closed' | 'resolved' | 'cancelled';

export type Resolution = 'resolved' | 'push' | 'pending' | 'disputed';

export interface Outcome {
  readonly label: string;
  readonly token_id: string;
}

/** What the two up/down families (coin and wallet) both know of a market: its coin, window, life and resolution. */
interface UpDownMarketFields {
  readonly coin: string;
  readonly window: string | null;
  readonly start_time: number | null;
  readonly end_time: number | null;
  readonly created_time: number | null;
  readonly updated_time: number | null;
  readonly status: MarketStatus;
  readonly resolution: Resolution | null;
  readonly winning_outcome: string | null;
  readonly resolved_time: number | null;
  readonly volume: number | null;
  readonly liquidity: number | null;
}

/** A market of the `clob` venue as described by its `catalog` REST (the `/v3/{coin}` family). */
export interface CoinMarket extends UpDownMarketFields {
  readonly family: 'coin';
  readonly market_id: string;
  readonly event_id: string | null;
  readonly condition_id: string;
  readonly slug: string | null;
  readonly question: string;
  /** First outcome first: the venue prices books in each token; `outcomes[0]` is Up. */
  readonly outcomes: readonly Outcome[];
  readonly native: unknown;
}

/** A wallet venue topic joined to its underlying market (the `/v3/wallet-prediction` family). */
export interface WalletMarket extends UpDownMarketFields {
  readonly family: 'wallet-prediction';
  readonly topic_id: string;
  readonly market_id: string;
  readonly condition_id: string;
  readonly slug: string | null;
  /** First outcome (indexSet 1) first: the stored book is priced in it; the other is its mirror. */
  readonly outcomes: readonly Outcome[];
  readonly participants: number | null;
  readonly chain: { readonly chain_id: number; readonly exchange_contract: string } | null;
  readonly start_price: number | null;
  readonly end_price: number | null;
  readonly native: unknown;
}

/** A yes/no exchange market (the `/v3/yesno-exchange` family); `market_id` is the ticker. */
export interface YesNoMarket {
  readonly family: 'yesno-exchange';
  readonly market_id: string;
  readonly ticker: string;
  readonly event_ticker: string;
  readonly series_ticker: string;
  readonly title: string;
  /** The venue's own status word (`active`, `closed`, `finalized`, ...), kept native. */
  readonly status: string;
  readonly open_time: number | null;
  readonly close_time: number | null;
  /** `"yes" | "no" | ""` as the venue says. */
  readonly result: string;
  readonly native: unknown;
}

export type Market = CoinMarket | WalletMarket | YesNoMarket;

/**
 * The fields of each family's market that the `catalog` dataset stores (storage/parquet/rows.ts
 * writes them, records.ts reads them back; any other field is refused): a field the market shape
 * lacks does not compile.
 */
export const CATALOG_FIELDS: { readonly [F in Market['family']]: readonly (keyof Extract<Market, { family: F }>)[] } = {
  coin: [
    'family',
    'market_id',
    'event_id',
    'condition_id',
    'slug',
    'question',
    'outcomes',
    'coin',
    'window',
    'start_time',
    'end_time',
    'created_time',
    'updated_time',
    'status',
    'resolution',
    'winning_outcome',
    'resolved_time',
    'volume',
    'liquidity',
    'native',
  ],
  'wallet-prediction': [
    'family',
    'topic_id',
    'market_id',
    'condition_id',
    'slug',
    'outcomes',
    'coin',
    'window',
    'start_time',
    'end_time',
    'created_time',
    'updated_time',
    'status',
    'resolution',
    'winning_outcome',
    'resolved_time',
    'volume',
    'liquidity',
    'participants',
    'chain',
    'start_price',
    'end_price',
    'native',
  ],
  'yesno-exchange': [
    'family',
    'market_id',
    'ticker',
    'event_ticker',
    'series_ticker',
    'title',
    'status',
    'open_time',
    'close_time',
    'result',
    'native',
  ],
};
