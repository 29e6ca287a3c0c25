// The book routes of every family, from its descriptor (src/families/): `snapshots` (pages of book
// snapshots, or interval samples where the family has them) and `orderbook/latest` (the newest book,
// kept warm and serialized once per change, or the book `as_of` a time). One code path for all.

import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { invalidParameter, notFound, PmtapeError } from '../../errors.js';
import type { Market } from '../../schema/market.js';
import { toIso } from '../../schema/time.js';
import type { FamilyDescriptor, BookView } from '../../families/descriptor.js';
import { JSON_TYPE } from '../query/latest-body.js';
import type { BookModel } from '../../book/book-model.js';
import { bookAsOf, snapshotPage } from '../query/book-pages.js';
import { asOfParam, listParams } from '../query/params.js';
import { listOf, narrowQuery, oneOf, queryParam, single, typedParams, typedQuery } from '../route-params.js';
import { nextCursor, pageCursor, resumeOf } from './helpers.js';
import { cursorMarket } from '../query/cursor.js';
import { resolvePathMarket, type ResolvedMarket } from '../query/resolve-market.js';

/** Every parameter any family's snapshots route takes; each family accepts its own subset. */
const SNAPSHOTS_QUERY = typedQuery({
  start_time: Type.Optional(queryParam.start_time),
  end_time: Type.Optional(queryParam.end_time),
  limit: Type.Optional(queryParam.limit),
  cursor: Type.Optional(queryParam.cursor),
  order: Type.Optional(queryParam.order),
  depth: Type.Optional(queryParam.depth),
  include_orderbook: Type.Optional(queryParam.include_orderbook),
  outcome: Type.Optional(queryParam.outcome),
  interval: Type.Optional(Type.String()),
});

/** Every parameter any family's latest route takes. */
const LATEST_QUERY = typedQuery({
  depth: Type.Optional(queryParam.depth),
  as_of: Type.Optional(queryParam.as_of),
  clock: Type.Optional(queryParam.clock),
  include_orderbook: Type.Optional(queryParam.include_orderbook),
  outcome: Type.Optional(queryParam.outcome),
});

/** `outcome` must be one of the market's labels (400 naming them). */
export function outcomeOr400(market: Market | null, label: string | undefined): string | undefined {
  if (label === undefined || market === null || !('outcomes' in market)) return label;
  if (market.outcomes.some((o) => o.label === label)) return label;
  throw invalidParameter('outcome', `must be one of this market's outcome labels (${market.outcomes.map((o) => o.label).join(', ')})`);
}

function modelOf(descriptor: FamilyDescriptor, target: ResolvedMarket, view: BookView): BookModel {
  const m = descriptor.bookModel(target.id, target.market, view);
  // A family that needs the catalogue resolves only catalogued markets: this is a bug, not bad input.
  if (!m) throw new PmtapeError('internal', `no book model for ${descriptor.family} market ${target.id}`);
  return m;
}

const bodyKey = (key: string, depth: number | undefined, includeOrderbook: boolean | undefined, outcome: string | undefined): string =>
  `${key}|${depth}|${includeOrderbook}|${outcome ?? ''}`;

/** A market's latest-book cache key, and its body keys for queries without depth or outcome. */
interface LatestKeys {
  readonly key: string;
  readonly plain: Map<boolean | undefined, string>;
}

/**
 * Keys of the fast path, made once per catalogue entry: a key built per request is a new string
 * that every cache lookup must flatten and hash again, on every request of the fast path.
 */
const latestKeys = new WeakMap<Market, LatestKeys>();

function latestKeysOf(family: string, market: Market): LatestKeys {
  let k = latestKeys.get(market);
  if (k === undefined) latestKeys.set(market, (k = { key: `${family}|${market.market_id}`, plain: new Map() }));
  return k;
}

function bodyKeyOf(k: LatestKeys, depth: number | undefined, includeOrderbook: boolean | undefined, outcome: string | undefined): string {
  if (depth !== undefined || outcome !== undefined) return bodyKey(k.key, depth, includeOrderbook, outcome);
  let b = k.plain.get(includeOrderbook);
  if (b === undefined) k.plain.set(includeOrderbook, (b = bodyKey(k.key, depth, includeOrderbook, outcome)));
  return b;
}

/**
 * The latest route's answer when everything it depends on is already in memory and known current:
 * the catalogue view, the watched latest book, the recorder status and the body serialized from
 * them. No promise, no model, no I/O: the price of a request for an unchanged market. Undefined
 * sends the request down the full path (which also answers every error). A market that resolves
 * and belongs to the path's scope proves the scope known (its check passes for a scope that holds
 * a market), so that check is skipped here.
 */
function latestNow(
  app: FastifyInstance,
  descriptor: FamilyDescriptor,
  params: Record<string, string>,
  query: { depth?: number; include_orderbook?: boolean; outcome?: string },
): Buffer | undefined {
  const routes = descriptor.routes;
  const pathId = params[routes.idParam];
  const hit = app.pmtape.markets.resolveNow(descriptor.family, pathId);
  if (!hit) return undefined;
  const market = hit.market;
  if (routes.scope && routes.scope.mismatch(market, params[routes.scope.param], pathId) !== null) return undefined;
  if (query.outcome !== undefined && !('outcomes' in market && market.outcomes.some((o) => o.label === query.outcome))) return undefined;
  const keys = latestKeysOf(descriptor.family, market);
  const point = app.pmtape.latest.peek(keys.key);
  if (point === undefined) return undefined;
  const live = app.pmtape.status.connectedNow(descriptor.family, market.market_id);
  if (live === undefined) return undefined;
  return app.pmtape.latestBodies.peek(
    bodyKeyOf(keys, query.depth, query.include_orderbook, query.outcome),
    point.rec,
    market,
    point.gapOpen || !live,
  );
}

/** Registers the family's book routes on `app` (mounted under each of the family's prefixes). */
export function bookRoutes(app: FastifyInstance, descriptor: FamilyDescriptor): void {
  const routes = descriptor.routes;
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  const config = { plan: descriptor.plan };
  const paramNames = [...(routes.scope ? [routes.scope.param] : []), routes.idParam];
  const params = typedParams(paramNames);
  const route = `${routes.name}.snapshots`;
  const sampling = descriptor.sampling;

  api.get(
    `${routes.marketPath}/snapshots`,
    {
      config,
      schema: {
        description: routes.describe.snapshots,
        params,
        querystring: narrowQuery(SNAPSHOTS_QUERY, {
          depth: routes.depth,
          include_orderbook: Type.Boolean({ default: routes.includeOrderbook.snapshots }),
          outcome: routes.outcomes ? queryParam.outcome : false,
          interval: sampling ? oneOf(['raw', ...Object.keys(sampling.intervals)], { default: 'raw' }) : false,
        }),
        response: { 200: routes.schemas.snapshotsPage ?? listOf(routes.schemas.snapshot) },
      },
    },
    async (req, reply) => {
      const query = req.query;
      const list = listParams(query);
      const target = await resolvePathMarket(app, descriptor, req.params);
      const view = {
        depth: query.depth,
        outcome: outcomeOr400(target.market, query.outcome),
        includeOrderbook: query.include_orderbook ?? true,
      };
      // The cursor is bound to the query and the market (one cursor never serves another market).
      const cursorScope = { ...query, _market: target.id };
      const reader = await app.pmtape.markets.reader(descriptor.family, 'books', target.id);
      if (sampling === undefined || query.interval === 'raw' || query.interval === undefined) {
        const resume = resumeOf(app, route, cursorScope, list);
        const page = await snapshotPage(reader, modelOf(descriptor, target, view), {
          order: list.order,
          limit: list.limit,
          start: list.start,
          end: list.end,
          resume,
        });
        // `mk` names the market for the stream's `from`, which cannot check the query digest (protocol.ts).
        return {
          data: page.items,
          next_cursor: pageCursor(app, req, reply, route, cursorScope, page, { mk: cursorMarket(descriptor.family, target.id) }),
        };
      }
      let resume: number | undefined;
      if (list.cursor !== undefined) {
        const pos = app.pmtape.cursors.decode(list.cursor, route, cursorScope);
        if (typeof pos.bucket !== 'number') throw new PmtapeError('invalid_cursor', "Parameter 'cursor' does not belong to this route.");
        resume = pos.bucket;
      }
      const page = await sampling.page(
        reader,
        target.market!,
        {
          intervalMs: sampling.intervals[query.interval],
          order: list.order,
          limit: list.limit,
          start: list.start,
          end: list.end,
          resume,
          now: Date.now(),
          connected: await app.pmtape.status.isConnected(descriptor.family, target.id),
        },
        view,
      );
      return { data: page.items, next_cursor: nextCursor(app, route, cursorScope, page.next), gaps: page.gaps };
    },
  );

  api.get(
    `${routes.marketPath}/orderbook/latest`,
    {
      config,
      schema: {
        description: routes.describe.latest,
        params,
        querystring: narrowQuery(LATEST_QUERY, {
          depth: routes.depth,
          include_orderbook: routes.includeOrderbook.latest === null ? false : Type.Boolean({ default: routes.includeOrderbook.latest }),
          outcome: routes.outcomes ? queryParam.outcome : false,
        }),
        response: { 200: single(routes.schemas.snapshot) },
      },
    },
    (req, reply) => {
      // Not an async function: an unchanged market is answered synchronously, with no promise and
      // no microtask; everything else takes the async full path below.
      const query = req.query;
      const asOf = query.as_of === undefined ? undefined : asOfParam(query);
      if (asOf === undefined) {
        const body = latestNow(app, descriptor, req.params, query);
        if (body !== undefined) return void reply.type(JSON_TYPE).send(body);
      }
      return (async () => {
        const target = await resolvePathMarket(app, descriptor, req.params);
        const outcome = outcomeOr400(target.market, query.outcome);
        const model = modelOf(descriptor, target, { depth: query.depth, outcome, includeOrderbook: query.include_orderbook ?? true });
        const reader = await app.pmtape.markets.reader(descriptor.family, 'books', target.id);
        const key = `${descriptor.family}|${target.id}`;
        const point =
          asOf === undefined
            ? await app.pmtape.latest.get(key, reader, modelOf(descriptor, target, {}))
            : await bookAsOf(reader, model, asOf, query.clock === 'source' ? 'source' : 'receive');
        if (!point) {
          throw notFound(
            asOf === undefined
              ? `No book recorded yet for ${routes.noun} '${target.id}'.`
              : `No book recorded for ${routes.noun} '${target.id}' target or before ${toIso(asOf)}.`,
          );
        }
        const live = asOf === undefined ? await app.pmtape.status.isConnected(descriptor.family, target.id) : true;
        const stale = point.gapOpen || !live;
        if (asOf !== undefined) return { data: { ...model.shape(point.rec, point.books), stale } };
        // The newest book is shaped and serialized (by this route's response schema) once per change.
        const text = app.pmtape.latestBodies.body(
          bodyKey(key, query.depth, query.include_orderbook, outcome),
          point.rec,
          target.market,
          stale,
          () => reply.serialize({ data: { ...model.shape(point.rec, point.books), stale } }) as string,
        ); // fast-json-stringify: a string
        return reply.type(JSON_TYPE).send(text);
      })();
    },
  );
}
