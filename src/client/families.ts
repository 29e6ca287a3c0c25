// How the client reaches each family (API.md §3-5): the paths of its market list and of one market,
// and the fields its stream subscription names a market by. One row per family: the client is its
// own package and cannot read the server's family descriptors, so a new family is a row here.

export type Family = 'coin' | 'wallet-prediction' | 'yesno-exchange';

/** Which market: coin-family markets also name their coin; yes/no markets are tickers. */
export interface MarketRef {
  readonly family: Family;
  readonly coin?: string;
  readonly marketId?: string;
  readonly ticker?: string;
}

export interface FamilyPaths {
  /** The market list (`coin` scopes it where the family is scoped by coin). */
  marketsPath(coin: string | undefined): string;
  /** `/markets` accepts `coin=` as a filter. */
  readonly coinFilter: boolean;
  /** The path one market's routes hang under; throws a TypeError naming what the reference lacks. */
  marketPath(ref: MarketRef): string;
  /** The fields of a stream subscription that name the market, in the order they are sent. */
  subscription(ref: Omit<MarketRef, 'family'>): Record<string, string | undefined>;
}

const enc = encodeURIComponent;

const needId = (ref: MarketRef): string => {
  if (!ref.marketId) throw new TypeError(`${ref.family} needs marketId`);
  return ref.marketId;
};

export const FAMILY_PATHS: Readonly<Record<Family, FamilyPaths>> = {
  coin: {
    marketsPath: (coin) => `/v3/${enc(coin ?? '')}/markets`,
    coinFilter: false,
    marketPath: (ref) => {
      const id = needId(ref);
      if (!ref.coin) throw new TypeError('the coin family needs coin');
      return `/v3/${enc(ref.coin)}/markets/${enc(id)}`;
    },
    subscription: (ref) => ({ market_id: ref.marketId, coin: ref.coin }),
  },
  'wallet-prediction': {
    marketsPath: () => '/v3/wallet-prediction/markets',
    coinFilter: true,
    marketPath: (ref) => `/v3/wallet-prediction/${enc(needId(ref))}`,
    subscription: (ref) => ({ market_id: ref.marketId }),
  },
  'yesno-exchange': {
    marketsPath: () => '/v3/yesno-exchange/markets',
    coinFilter: false,
    marketPath: (ref) => {
      const t = ref.ticker ?? ref.marketId;
      if (!t) throw new TypeError('yesno-exchange needs ticker');
      return `/v3/yesno-exchange/${enc(t)}`;
    },
    subscription: (ref) => ({ ticker: ref.ticker ?? ref.marketId }),
  },
};
