// The wallet-prediction family's response schemas (API.md §3): its market record and the snapshot of
// one outcome.

import { numLevels, numOrNull, outcomes, str, strOrNull } from '../json-parts.js';

export const walletMarketSchema = {
  type: 'object',
  properties: {
    topic_id: str,
    market_id: str,
    condition_id: str,
    outcomes,
    coin: str,
    window: strOrNull,
    start_time: strOrNull,
    end_time: strOrNull,
    created_time: strOrNull,
    updated_time: strOrNull,
    status: str,
    resolution: strOrNull,
    winning_outcome: strOrNull,
    resolved_time: strOrNull,
    volume: numOrNull,
    liquidity: numOrNull,
    participants: { type: ['integer', 'null'] },
    chain: {
      type: ['object', 'null'],
      properties: { chain_id: { type: 'integer' }, exchange_contract: str },
    },
  },
} as const;

export const walletSnapshotSchema = {
  type: 'object',
  properties: {
    market_id: str,
    outcome: str,
    token_id: str,
    source_time: strOrNull,
    receive_time: str,
    seq: { type: 'integer' },
    bids: numLevels,
    asks: numLevels,
    stale: { type: 'boolean' },
  },
} as const;
