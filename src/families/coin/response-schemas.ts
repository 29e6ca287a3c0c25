// The coin family's response schemas (API.md §5): its market record, its snapshot, and the
// snapshots page (which lists the uncovered buckets of an `interval` page in `gaps`).

import { gapSchema, numLevels, outcomes, str, strOrNull } from '../json-parts.js';

export const coinMarketSchema = {
  type: 'object',
  properties: {
    market_id: str,
    event_id: strOrNull,
    condition_id: str,
    question: str,
    outcomes,
    start_time: strOrNull,
    end_time: strOrNull,
    status: str,
    native: {},
  },
} as const;

export const coinSnapshotSchema = {
  type: 'object',
  properties: {
    market_id: str,
    source_time: strOrNull,
    receive_time: str,
    seq: { type: 'integer' },
    books: {
      type: 'array',
      items: { type: 'object', properties: { outcome: str, token_id: str, bids: numLevels, asks: numLevels } },
    },
    stale: { type: 'boolean' },
  },
} as const;

export const coinSnapshotsPageSchema = {
  type: 'object',
  properties: {
    data: {
      type: 'array',
      items: { ...coinSnapshotSchema, properties: { ...coinSnapshotSchema.properties, bucket_start: { type: 'string' } } },
    },
    next_cursor: { type: ['string', 'null'] },
    gaps: { type: 'array', items: gapSchema },
  },
  required: ['data', 'next_cursor'],
};
