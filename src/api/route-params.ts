// The parameters every route accepts: querystrings (unknown parameters rejected) and path params,
// as TypeBox schemas that type the handlers and are plain JSON Schema to Ajv. The response schemas
// (response-schemas.ts) are re-exported here. Shapes follow API.md exactly.

import { Type, type TSchema, type TProperties, type TObject, type TUnsafe } from 'typebox';
import type { MarketStatus } from '../schema/market.js';
import { paramShapes } from '../families/json-parts.js';

export * from './response-schemas.js';

const time = { maxLength: 64, description: 'ISO 8601 UTC or integer epoch milliseconds' } as const;

/** A string enum typed as its union, kept as `{type: 'string', enum}` (what the routes always declared). */
export const oneOf = <T extends string>(values: readonly T[], opts: Record<string, unknown> = {}): TUnsafe<T> =>
  Type.Unsafe<T>({ type: 'string', enum: [...values], ...opts });

/** Query parameters shared by the routes (TypeBox: typed for handlers, plain JSON Schema for Ajv). */
export const queryParam = {
  limit: Type.Integer({ minimum: 1, maximum: 1000, default: 100 }),
  cursor: Type.String({ maxLength: 4096, description: 'next_cursor of the previous page' }),
  start_time: Type.String({ ...time, description: 'inclusive; ISO 8601 UTC or epoch ms' }),
  end_time: Type.String({ ...time, description: 'exclusive; ISO 8601 UTC or epoch ms' }),
  order: oneOf(['asc', 'desc'], { default: 'asc' }),
  depth: Type.Unsafe<number>(paramShapes.depth),
  include_orderbook: Type.Boolean(),
  outcome: Type.String({ minLength: 1, maxLength: 100, description: 'outcome label (default the first)' }),
  as_of: Type.String({ ...time, description: 'the book as it stood at this time instead of the newest' }),
  clock: oneOf(['receive', 'source'], { default: 'receive', description: 'which clock as_of refers to' }),
  status: Type.Unsafe<MarketStatus>(paramShapes.status),
  window: Type.Unsafe<string>(paramShapes.window),
  coin: Type.Unsafe<string>(paramShapes.coin),
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
    else if (v !== undefined) out[k] = Type.Optional(v);
  }
  return { ...full, properties: out }; // the static type stays the full set: every dropped key is optional
}

export const ID_PARAM = { type: 'string', minLength: 1, maxLength: 200 } as const;

export function params(names: string[]): object {
  return { type: 'object', properties: Object.fromEntries(names.map((n) => [n, ID_PARAM])), required: names };
}

/** Path parameters, typed. */
export const typedParams = <K extends string>(names: readonly K[]): TObject<Record<K, ReturnType<typeof Type.String>>> =>
  Type.Object(
    Object.fromEntries(names.map((n) => [n, Type.String({ minLength: 1, maxLength: 200 })])) as Record<K, ReturnType<typeof Type.String>>,
  );
