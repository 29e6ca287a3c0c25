// The `/markets` list of every family, from its descriptor: the catalogue entries in listing order
// (first capture, then id) filtered by the family's own parameters, shaped as its market record.
// `as_of=T` answers the catalogue as it stood at T (markets-asof.ts). The coin family's list is scoped by the `{coin}` path segment, which its cursors are bound to.

import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { FamilyDescriptor } from '../../families/descriptor.js';
import { asOfParam, listParams } from '../query/params.js';
import { catalogAsOf } from '../query/markets-asof.js';
import { listOf, narrowQuery, queryParam, typedParams, typedQuery } from '../route-params.js';
import { PmtapeError } from '../../errors.js';
import type { IndexedMarket } from '../query/markets-index.js';
import type { ListParams, Query } from '../query/params.js';

/** Every parameter any family's market list takes; each family accepts its common ones plus its filters. */
const MARKETS_QUERY = typedQuery({
  limit: Type.Optional(queryParam.limit),
  cursor: Type.Optional(queryParam.cursor),
  order: Type.Optional(queryParam.order),
  start_time: Type.Optional(queryParam.start_time),
  end_time: Type.Optional(queryParam.end_time),
  as_of: Type.Optional(
    Type.String({
      maxLength: 64,
      description: 'the catalogue as it stood at this time (ISO 8601 UTC or epoch ms): status, labels, tick size',
    }),
  ),
  coin: Type.Optional(Type.String()),
  window: Type.Optional(Type.String()),
  status: Type.Optional(Type.String()),
  series: Type.Optional(Type.String()),
});

export function marketsRoute(app: FastifyInstance, d: FamilyDescriptor): void {
  const r = d.routes;
  const f = r.marketFilters;
  const route = `${r.name}.markets`;
  app.withTypeProvider<TypeBoxTypeProvider>().get(
    r.marketsPath,
    {
      config: { plan: d.plan },
      schema: {
        description: r.describe.markets,
        params: typedParams(r.scope ? [r.scope.param] : []),
        querystring: narrowQuery(MARKETS_QUERY, {
          coin: f.coin ?? false,
          window: f.window ?? false,
          status: f.status ?? false,
          series: f.series ?? false,
        }),
        response: { 200: listOf(r.schemas.market) },
      },
    },
    async (req) => {
      const qs = req.query;
      const lp = listParams(qs);
      const scope = r.scope ? req.params[r.scope.param] : undefined;
      if (r.scope) await r.scope.check(app, scope!);
      const filter = { coin: scope ?? qs.coin, window: qs.window, status: qs.status, series: qs.series, start: lp.start, end: lp.end };
      // The scope is part of the cursor's query: a btc cursor is refused on /v3/eth/markets.
      const cq = r.scope ? { ...qs, [`_${r.scope.param}`]: scope } : qs;
      const asOf = asOfParam(qs);
      const all = await app.pmtape.markets.list(d.family);
      const entries = asOf === undefined ? all : await catalogAsOf(all, asOf, (f, id) => app.pmtape.markets.reader(f, 'catalog', id));
      return listPage(
        app,
        route,
        cq,
        entries,
        (e) => d.keep(e.market, filter),
        (e) => d.marketRecord(e.market),
        lp,
      );
    },
  );
}

/**
 * One page of catalogue entries in listing order (first capture, then id; `desc` reverses it). The
 * cursor holds the last entry's sort key, so markets listed later (always sorted after it) are
 * never skipped by an ascending walk.
 */
export function listPage<T>(
  app: FastifyInstance,
  route: string,
  query: Query,
  entries: readonly IndexedMarket[],
  keep: (m: IndexedMarket) => boolean,
  shape: (m: IndexedMarket) => T,
  lp: Pick<ListParams, 'limit' | 'cursor' | 'order'>,
): { data: T[]; next_cursor: string | null } {
  const desc = lp.order === 'desc';
  let from: { ts: number; id: string } | null = null;
  if (lp.cursor !== undefined) {
    const pos = app.pmtape.cursors.decode(lp.cursor, route, query);
    if (typeof pos.ts !== 'number' || typeof pos.id !== 'string')
      throw new PmtapeError('invalid_cursor', "Parameter 'cursor' does not belong to this route.");
    from = { ts: pos.ts, id: pos.id };
  }
  // Compare an entry with the cursor key: < 0 before it, 0 equal, > 0 after it (ascending order).
  const cmp = (e: IndexedMarket, k: { ts: number; id: string }): number =>
    e.first_ts !== k.ts ? e.first_ts - k.ts : e.market.market_id < k.id ? -1 : e.market.market_id > k.id ? 1 : 0;
  const data: T[] = [];
  let last: IndexedMarket | null = null;
  const n = entries.length;
  for (let i = 0; i < n; i++) {
    const e = entries[desc ? n - 1 - i : i];
    if (from && (desc ? cmp(e, from) >= 0 : cmp(e, from) <= 0)) continue;
    if (!keep(e)) continue;
    if (data.length === lp.limit) {
      return { data, next_cursor: app.pmtape.cursors.encode(route, query, { ts: last!.first_ts, id: last!.market.market_id }) };
    }
    data.push(shape(e));
    last = e;
  }
  return { data, next_cursor: null };
}
