// JSON schemas of every route: querystrings (unknown parameters rejected), path params, and
// responses (fast serialization, and the OpenAPI document at /docs). Shapes follow API.md exactly.

import { Type, type TSchema, type TProperties, type TObject, type TUnsafe } from 'typebox';

const str = { type: 'string' } as const;
const strOrNull = { type: ['string', 'null'] } as const;
const numOrNull = { type: ['number', 'null'] } as const;
const time = { maxLength: 64, description: 'ISO 8601 UTC or integer epoch milliseconds' } as const;

/** A string enum typed as its union, kept as `{type: 'string', enum}` (what the routes always declared). */
export const oneOf = <T extends string>(values: readonly T[], opts: Record<string, unknown> = {}): TUnsafe<T> =>
  Type.Unsafe<T>({ type: 'string', enum: [...values], ...opts });

/** Query parameters shared by the routes (TypeBox: typed for handlers, plain JSON Schema for Ajv). */
export const q = {
  limit: Type.Integer({ minimum: 1, maximum: 1000, default: 100 }),
  cursor: Type.String({ maxLength: 4096, description: 'next_cursor of the previous page' }),
  start_time: Type.String({ ...time, description: 'inclusive; ISO 8601 UTC or epoch ms' }),
  end_time: Type.String({ ...time, description: 'exclusive; ISO 8601 UTC or epoch ms' }),
  order: oneOf(['asc', 'desc'], { default: 'asc' }),
  depth: Type.Integer({ minimum: 1, maximum: 1000, description: 'levels per side (default all)' }),
  include_orderbook: Type.Boolean(),
  outcome: Type.String({ minLength: 1, maxLength: 100, description: 'outcome label (default the first)' }),
  as_of: Type.String({ ...time, description: 'the book as it stood at this time instead of the newest' }),
  clock: oneOf(['receive', 'source'], { default: 'receive', description: 'which clock as_of refers to' }),
  status: oneOf(['upcoming', 'open', 'closed', 'resolved', 'cancelled']),
  window: Type.String({ pattern: '^[0-9]{1,4}[smhd]$', maxLength: 8 }),
  coin: Type.String({ pattern: '^[a-z0-9]{1,16}$' }),
};

/** A querystring schema that rejects anything not listed (untyped: for routes that parse by hand). */
export function query(props: Record<string, object>, required: string[] = []): object {
  return { type: 'object', properties: props, additionalProperties: false, required };
}

/** A typed querystring schema that rejects anything not listed. */
export const typedQuery = <P extends TProperties>(props: P): TObject<P> => Type.Object(props, { additionalProperties: false });

/**
 * A family's variant of a route's querystring: typed as the route's full parameter set, accepting at
 * run time only the parameters the family declares (`false` drops one, a schema replaces it), so an
 * unknown parameter stays a 400 as the contract says.
 */
export function narrowQuery<T extends TObject>(full: T, props: { readonly [K in keyof T['properties']]?: TSchema | false }): T {
  const out: Record<string, unknown> = { ...full.properties };
  for (const [k, v] of Object.entries(props)) {
    if (v === false) delete out[k];
    else if (v !== undefined) out[k] = Type.Optional(v as TSchema);
  }
  return { ...full, properties: out } as T; // the static type stays the full set: every dropped key is optional
}

export const ID_PARAM = { type: 'string', minLength: 1, maxLength: 200 } as const;

export function params(names: string[]): object {
  return { type: 'object', properties: Object.fromEntries(names.map((n) => [n, ID_PARAM])), required: names };
}

/** Path parameters, typed. */
export const typedParams = <K extends string>(names: readonly K[]): TObject<Record<K, ReturnType<typeof Type.String>>> =>
  Type.Object(Object.fromEntries(names.map((n) => [n, Type.String({ minLength: 1, maxLength: 200 })])) as Record<K, ReturnType<typeof Type.String>>);

export const listOf = (item: object): object => ({
  type: 'object',
  properties: { data: { type: 'array', items: item }, next_cursor: strOrNull },
  required: ['data', 'next_cursor'],
});

export const single = (item: object): object => ({ type: 'object', properties: { data: item }, required: ['data'] });

const numLevels = { type: 'array', items: { type: 'array', items: { type: 'number' }, minItems: 2, maxItems: 2 } } as const;
const outcomes = {
  type: 'array',
  items: { type: 'object', properties: { label: str, token_id: str }, required: ['label', 'token_id'] },
} as const;

export const walletMarketSchema = {
  type: 'object',
  properties: {
    topic_id: str, market_id: str, condition_id: str, outcomes, coin: str, window: strOrNull,
    start_time: strOrNull, end_time: strOrNull, created_time: strOrNull, updated_time: strOrNull,
    status: str, resolution: strOrNull, winning_outcome: strOrNull, resolved_time: strOrNull,
    volume: numOrNull, liquidity: numOrNull, participants: { type: ['integer', 'null'] },
    chain: {
      type: ['object', 'null'],
      properties: { chain_id: { type: 'integer' }, exchange_contract: str },
    },
  },
} as const;

export const walletSnapshotSchema = {
  type: 'object',
  properties: {
    market_id: str, outcome: str, token_id: str, source_time: strOrNull, receive_time: str,
    seq: { type: 'integer' }, bids: numLevels, asks: numLevels, stale: { type: 'boolean' },
  },
} as const;

export const sampleSchema = {
  type: 'object',
  properties: { time: str, metric: str, outcome: str, value: { type: 'number' }, seq: { type: 'integer' } },
} as const;

export const coinMarketSchema = {
  type: 'object',
  properties: {
    market_id: str, event_id: strOrNull, condition_id: str, question: str, outcomes,
    start_time: strOrNull, end_time: strOrNull, status: str, native: {},
  },
} as const;

export const coinSnapshotSchema = {
  type: 'object',
  properties: {
    market_id: str, source_time: strOrNull, receive_time: str, seq: { type: 'integer' },
    books: {
      type: 'array',
      items: { type: 'object', properties: { outcome: str, token_id: str, bids: numLevels, asks: numLevels } },
    },
    stale: { type: 'boolean' },
  },
} as const;

export const gapSchema = {
  type: 'object',
  properties: { start: str, end: strOrNull, reason: str },
} as const;

export const yesnoMarketSchema = {
  type: 'object',
  properties: {
    ticker: str, event_ticker: str, series_ticker: str, title: str, status: str,
    open_time: strOrNull, close_time: strOrNull, result: str, native: {},
  },
} as const;

const ladderText = { type: 'object', properties: { prices: { type: 'array', items: str }, sizes: { type: 'array', items: str } } } as const;

export const yesnoSnapshotSchema = {
  type: 'object',
  properties: {
    ticker: str, observed_time: str, receive_time: str, seq: { type: 'integer' }, units: str,
    yes: ladderText, no: ladderText,
    levels: { type: 'object', properties: { yes: { type: 'integer' }, no: { type: 'integer' } } },
    stale: { type: 'boolean' },
  },
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
    connected: { type: 'boolean' },
  },
} as const;
