// The API's own response schemas in plain JSON Schema (fast serialization and the OpenAPI document):
// pages and single objects, metric samples, coverage, and the error envelope. Each family's market
// and snapshot schemas live in its folder (src/families/<family>/response-schemas.ts); the pieces
// they share are src/families/json-parts.ts.

import { gapSchema, numOrNull, str, strOrNull } from '../families/json-parts.js';

export const listOf = (item: object): object => ({
  type: 'object',
  properties: { data: { type: 'array', items: item }, next_cursor: strOrNull },
  required: ['data', 'next_cursor'],
});

export const single = (item: object): object => ({ type: 'object', properties: { data: item }, required: ['data'] });

export const sampleSchema = {
  type: 'object',
  properties: { time: str, metric: str, outcome: str, value: { type: 'number' }, seq: { type: 'integer' } },
} as const;

const datasetSpan = {
  type: ['object', 'null'],
  properties: { first_time: str, last_time: str, first_seq: { type: 'integer' }, last_seq: { type: 'integer' } },
} as const;

export const coverageSchema = {
  type: 'object',
  properties: {
    family: str,
    market_id: str,
    datasets: { type: 'object', properties: { books: datasetSpan, metrics: datasetSpan, catalog: datasetSpan } },
    intervals: { type: 'array', items: { type: 'object', properties: { start: str, end: str } } },
    gaps: { type: 'array', items: gapSchema },
    sources: {
      type: 'array',
      description:
        'a history merged from several recorders (docs/redundancy.md): the recorded intervals split by the recorder each came from; absent for a single recorder',
      items: { type: 'object', properties: { start: str, end: str, recorder: { type: ['string', 'null'] } } },
    },
    connected: { type: 'boolean' },
  },
} as const;

/** The contract's error envelope (API.md §2), the body of every error status of every route. */
export const envelopeSchema = {
  type: 'object',
  properties: {
    error: {
      type: 'object',
      properties: { status: { type: 'integer' }, code: { type: 'string' }, message: { type: 'string' }, request_id: { type: 'string' } },
      required: ['status', 'code', 'message', 'request_id'],
    },
  },
  required: ['error'],
} as const;

/** What each error status means on the routes (the codes of API.md §2), for the OpenAPI document. */
const ERROR_MEANING: Record<number, string> = {
  400: 'invalid_parameter (a sentence naming the parameter) or invalid_cursor',
  401: 'unauthorized: missing, malformed, unknown or revoked key',
  403: "plan_required: the key's plan does not include this route or family",
  404: 'not_found: unknown market, ticker, coin or file',
  416: 'range_not_satisfiable: the Range header asks for bytes outside the file',
  429: 'rate_limited: per-key rate limit exceeded; Retry-After says when to retry',
  500: 'internal: a bug; the message is hidden, quote request_id',
};

/** Response schemas of the error envelope for the given statuses (they also serialize the envelope). */
export const errorResponses = (statuses: readonly number[]): Record<number, object> =>
  Object.fromEntries(
    statuses.map((s) => [s, { ...envelopeSchema, description: `error envelope (API.md §2): ${ERROR_MEANING[s] ?? 'see API.md §2'}` }]),
  );
const ohlcOrNull = {
  type: ['object', 'null'],
  properties: { open: { type: 'number' }, high: { type: 'number' }, low: { type: 'number' }, close: { type: 'number' } },
  required: ['open', 'high', 'low', 'close'],
} as const;

/** One candle (API.md §10); `units` only on a yes/no market's (its book's units). */
export const candleSchema = {
  type: 'object',
  properties: {
    start: str,
    outcome: str,
    units: str,
    mid: ohlcOrNull,
    last_trade: ohlcOrNull,
    best_bid: numOrNull,
    best_ask: numOrNull,
    volume: { type: 'number' },
    trades: { type: 'integer' },
    gap_seconds: { type: 'number' },
  },
  required: ['start', 'outcome', 'mid', 'last_trade', 'best_bid', 'best_ask', 'volume', 'trades', 'gap_seconds'],
} as const;

/** A market's lifecycle and result beside its data (candles page, replay end line). */
export const marketOutcomeSchema = {
  type: 'object',
  properties: { status: strOrNull, resolution: strOrNull, winning_outcome: strOrNull, resolved_time: strOrNull },
  required: ['status', 'resolution', 'winning_outcome', 'resolved_time'],
} as const;

export const candlesPageSchema = {
  type: 'object',
  properties: { data: { type: 'array', items: candleSchema }, next_cursor: strOrNull, market: marketOutcomeSchema },
  required: ['data', 'next_cursor', 'market'],
} as const;
