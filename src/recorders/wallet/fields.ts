// Every wire name of the wallet venue in one place. Much of that protocol is *unverified*
// (../shared/venues/wallet.md), so when the real names turn out different this is the only file to
// change: the normalizer, the feed and the URL paths all read their names from here.

import type { MarketStatus, Resolution } from '../../schema/market.js';

/** REST paths below `upstreams.wallet.rest` (the listing paths are our guess; the book path is documented). */
export const PATHS = {
  topics: '/v1/topics',
  markets: '/v1/markets',
  orderbook: (marketId: string): string => `/v1/markets/${encodeURIComponent(marketId)}/orderbook`,
  metrics: (marketId: string): string => `/v1/markets/${encodeURIComponent(marketId)}/stats`,
} as const;

/** REST envelope `{success, data, cursor}`; list pages carry the next cursor (null/'' = last page). */
export const ENVELOPE = { success: 'success', data: 'data', cursor: 'cursor', error: 'error' } as const;
/** Query parameters of the listing routes. */
export const QUERY = { limit: 'limit', cursor: 'cursor', status: 'status' } as const;
/** Credential header (the venue also accepts `?apiKey=`; we only ever send the header). */
export const API_KEY_HEADER = 'x-api-key';

/** Wallet-side topic fields. */
export const TOPIC = {
  id: 'marketTopicId',
  slug: 'slug',
  topicType: 'topicType',
  variant: 'marketVariant',
  marketId: 'marketId',
  asset: 'asset',
  interval: 'interval',
  startTime: 'startTime',
  endTime: 'endTime',
  status: 'status',
  startPrice: 'startPrice',
  endPrice: 'endPrice',
  createdAt: 'createdAt',
  updatedAt: 'updatedAt',
} as const;
export const UP_DOWN_VARIANT = 'CRYPTO_UP_DOWN';

/** Underlying-venue market fields. */
export const MARKET = {
  id: 'id',
  conditionId: 'conditionId',
  status: 'status',
  outcomes: 'outcomes',
  decimalPrecision: 'decimalPrecision',
  isNegRisk: 'isNegRisk',
  resolution: 'resolution',
  volume: 'volumeUsd',
  liquidity: 'liquidityUsd',
  participants: 'participants',
  chainId: 'chainId',
  exchangeContract: 'exchangeContract',
  createdAt: 'createdAt',
  updatedAt: 'updatedAt',
} as const;
export const OUTCOME = { label: 'name', indexSet: 'indexSet', tokenId: 'onChainId' } as const;
export const RESOLUTION = { status: 'status', winningIndexSet: 'winningIndexSet', resolvedAt: 'resolvedAt' } as const;

/** Venue status words → ours (both the topic's and the market's vocabulary). */
export const STATUS_WORDS: Readonly<Record<string, MarketStatus>> = {
  UPCOMING: 'upcoming',
  REGISTERED: 'upcoming',
  PENDING: 'upcoming',
  OPEN: 'open',
  ACTIVE: 'open',
  PAUSED: 'closed',
  CLOSED: 'closed',
  RESOLVED: 'resolved',
  SETTLED: 'resolved',
  CANCELLED: 'cancelled',
  CANCELED: 'cancelled',
};
/** Venue resolution words → ours; a tie settles as a push (50/50, no winner). */
export const RESOLUTION_WORDS: Readonly<Record<string, Resolution>> = {
  RESOLVED: 'resolved',
  PUSH: 'push',
  TIE: 'push',
  PENDING: 'pending',
  DISPUTED: 'disputed',
};

/** Order-book snapshot fields (WS push `data` and REST `data` are the same object). */
export const BOOK = {
  marketId: 'marketId',
  updateTimestampMs: 'updateTimestampMs',
  asks: 'asks',
  bids: 'bids',
  version: 'version',
  orderCount: 'orderCount',
} as const;

/** Metric sample fields of the stats route. */
export const METRIC = {
  marketId: 'marketId',
  timestampMs: 'timestampMs',
  outcomes: 'outcomes',
  indexSet: 'indexSet',
  label: 'name',
  chance: 'chance',
  price: 'price',
  lastTradePrice: 'lastTradePrice',
  lastTradeTimestampMs: 'lastTradeTimestampMs',
} as const;

/** WebSocket protocol. */
export const WS = {
  method: 'method',
  requestId: 'requestId',
  params: 'params',
  data: 'data',
  type: 'type',
  topic: 'topic',
  success: 'success',
  error: 'error',
  reply: 'R',
  push: 'M',
  subscribe: 'subscribe',
  unsubscribe: 'unsubscribe',
  heartbeat: 'heartbeat',
  heartbeatTopic: 'heartbeat',
  bookTopicPrefix: 'predictOrderbook/',
} as const;

export const bookTopic = (marketId: string): string => `${WS.bookTopicPrefix}${marketId}`;
