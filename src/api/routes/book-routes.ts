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
import { listOf, narrowQuery, oneOf, q, single, typedParams, typedQuery } from '../schemas.js';
import { nextCursor, resumeOf } from './helpers.js';
import { cursorMarket } from '../query/cursor.js';

/** Every parameter any family's snapshots route takes; each family accepts its own subset. */
const SNAPSHOTS_QUERY = typedQuery({
  start_time: Type.Optional(q.start_time), end_time: Type.Optional(q.end_time), limit: Type.Optional(q.limit),
  cursor: Type.Optional(q.cursor), order: Type.Optional(q.order), depth: Type.Optional(q.depth),
  include_orderbook: Type.Optional(q.include_orderbook), outcome: Type.Optional(q.outcome), interval: Type.Optional(Type.String()),
});

/** Every parameter any family's latest route takes. */
const LATEST_QUERY = typedQuery({
  depth: Type.Optional(q.depth), as_of: Type.Optional(q.as_of), clock: Type.Optional(q.clock),
  include_orderbook: Type.Optional(q.include_orderbook), outcome: Type.Optional(q.outcome),
});

/** The market a request names: its log id, catalogue entry (null: books only) and cursor scope. */
interface Resolved {
  readonly id: string;
  readonly market: Market | null;
}

/**
 * Resolves the path to a market with the contract's 404s: an unknown scope (coin), an unknown id, a
 * market of another scope; a yes/no ticker with books but no catalogue entry yet is served by id.
 */
export async function resolveMarket(app: FastifyInstance, d: FamilyDescriptor, params: Record<string, string>): Promise<Resolved> {
  const r = d.routes;
  const scope = r.scope ? params[r.scope.param] : undefined;
  if (r.scope) await r.scope.check(app, scope!);
  const pathId = params[r.idParam];
  const hit = await app.pmtape.markets.resolve(d.family, pathId);
  if (hit) {
    const wrong = r.scope ? r.scope.mismatch(hit.market, scope!, pathId) : null;
    if (wrong !== null) throw notFound(wrong);
    return { id: hit.market.market_id, market: hit.market };
  }
  if (d.booksWithoutCatalog && (await app.pmtape.markets.hasBooks(d.family, pathId))) return { id: pathId, market: null };
  throw notFound(r.unknownMessage(pathId, r.listUrl(scope)));
}

/** `outcome` must be one of the market's labels (400 naming them). */
export function outcomeOr400(market: Market | null, label: string | undefined): string | undefined {
  if (label === undefined || market === null || !('outcomes' in market)) return label;
  if (market.outcomes.some((o) => o.label === label)) return label;
  throw invalidParameter('outcome', `must be one of this market's outcome labels (${market.outcomes.map((o) => o.label).join(', ')})`);
}

function modelOf(d: FamilyDescriptor, at: Resolved, view: BookView): BookModel {
  const m = d.bookModel(at.id, at.market, view);
  // A family that needs the catalogue resolves only catalogued markets: this is a bug, not bad input.
  if (!m) throw new PmtapeError('internal', `no book model for ${d.family} market ${at.id}`);
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
 * that every cache lookup must flatten and hash again (0.3 µs a request in the profile).
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
function latestNow(app: FastifyInstance, d: FamilyDescriptor, params: Record<string, string>, qs: { depth?: number; include_orderbook?: boolean; outcome?: string }): Buffer | undefined {
  const r = d.routes;
  const pathId = params[r.idParam];
  const hit = app.pmtape.markets.resolveNow(d.family, pathId);
  if (!hit) return undefined;
  const market = hit.market;
  if (r.scope && r.scope.mismatch(market, params[r.scope.param], pathId) !== null) return undefined;
  if (qs.outcome !== undefined && !('outcomes' in market && market.outcomes.some((o) => o.label === qs.outcome))) return undefined;
  const keys = latestKeysOf(d.family, market);
  const point = app.pmtape.latest.peek(keys.key);
  if (point === undefined) return undefined;
  const live = app.pmtape.status.connectedNow(d.family, market.market_id);
  if (live === undefined) return undefined;
  return app.pmtape.latestBodies.peek(bodyKeyOf(keys, qs.depth, qs.include_orderbook, qs.outcome), point.rec, market, point.gapOpen || !live);
}

/** Registers the family's book routes on `app` (mounted under each of the family's prefixes). */
export function bookRoutes(app: FastifyInstance, d: FamilyDescriptor): void {
  const r = d.routes;
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  const config = { plan: d.plan };
  const paramNames = [...(r.scope ? [r.scope.param] : []), r.idParam];
  const params = typedParams(paramNames);
  const route = `${r.name}.snapshots`;
  const sampling = d.sampling;

  api.get(`${r.marketPath}/snapshots`, {
    config,
    schema: {
      description: r.describe.snapshots,
      params,
      querystring: narrowQuery(SNAPSHOTS_QUERY, {
        depth: r.depth,
        include_orderbook: Type.Boolean({ default: r.includeOrderbook.snapshots }),
        outcome: r.outcomes ? q.outcome : false,
        interval: sampling ? oneOf(['raw', ...Object.keys(sampling.intervals)], { default: 'raw' }) : false,
      }),
      response: { 200: r.schemas.snapshotsPage ?? listOf(r.schemas.snapshot) },
    },
  }, async (req) => {
    const qs = req.query;
    const lp = listParams(qs);
    const at = await resolveMarket(app, d, req.params);
    const view = { depth: qs.depth, outcome: outcomeOr400(at.market, qs.outcome), includeOrderbook: qs.include_orderbook ?? true };
    // The cursor is bound to the query and the market (one cursor never serves another market).
    const cq = { ...qs, _market: at.id };
    const reader = await app.pmtape.markets.reader(d.family, 'books', at.id);
    if (sampling === undefined || qs.interval === 'raw' || qs.interval === undefined) {
      const resume = resumeOf(app, route, cq, lp);
      const page = await snapshotPage(reader, modelOf(d, at, view), { order: lp.order, limit: lp.limit, start: lp.start, end: lp.end, resume });
      // `mk` names the market for the stream's `from`, which cannot check the query digest (protocol.ts).
      return { data: page.items, next_cursor: nextCursor(app, route, cq, page.next && { ...page.next, mk: cursorMarket(d.family, at.id) }) };
    }
    let resume: number | undefined;
    if (lp.cursor !== undefined) {
      const pos = app.pmtape.cursors.decode(lp.cursor, route, cq);
      if (typeof pos.bucket !== 'number') throw new PmtapeError('invalid_cursor', "Parameter 'cursor' does not belong to this route.");
      resume = pos.bucket;
    }
    const page = await sampling.page(reader, at.market!, {
      intervalMs: sampling.intervals[qs.interval], order: lp.order, limit: lp.limit, start: lp.start, end: lp.end, resume,
      now: Date.now(), connected: await app.pmtape.status.isConnected(d.family, at.id),
    }, view);
    return { data: page.items, next_cursor: nextCursor(app, route, cq, page.next), gaps: page.gaps };
  });

  api.get(`${r.marketPath}/orderbook/latest`, {
    config,
    schema: {
      description: r.describe.latest,
      params,
      querystring: narrowQuery(LATEST_QUERY, {
        depth: r.depth,
        include_orderbook: r.includeOrderbook.latest === null ? false : Type.Boolean({ default: r.includeOrderbook.latest }),
        outcome: r.outcomes ? q.outcome : false,
      }),
      response: { 200: single(r.schemas.snapshot) },
    },
  }, (req, reply) => {
    // Not an async function: an unchanged market is answered synchronously, with no promise and
    // no microtask; everything else takes the async full path below.
    const qs = req.query;
    const asOf = qs.as_of === undefined ? undefined : asOfParam(qs);
    if (asOf === undefined) {
      const body = latestNow(app, d, req.params, qs);
      if (body !== undefined) return void reply.type(JSON_TYPE).send(body);
    }
    return (async () => {
      const at = await resolveMarket(app, d, req.params);
      const outcome = outcomeOr400(at.market, qs.outcome);
      const model = modelOf(d, at, { depth: qs.depth, outcome, includeOrderbook: qs.include_orderbook ?? true });
      const reader = await app.pmtape.markets.reader(d.family, 'books', at.id);
      const key = `${d.family}|${at.id}`;
      const point = asOf === undefined
        ? await app.pmtape.latest.get(key, reader, modelOf(d, at, {}))
        : await bookAsOf(reader, model, asOf, qs.clock === 'source' ? 'source' : 'receive');
      if (!point) {
        throw notFound(asOf === undefined
          ? `No book recorded yet for ${r.noun} '${at.id}'.`
          : `No book recorded for ${r.noun} '${at.id}' at or before ${toIso(asOf)}.`);
      }
      const live = asOf === undefined ? await app.pmtape.status.isConnected(d.family, at.id) : true;
      const stale = point.gapOpen || !live;
      if (asOf !== undefined) return { data: { ...model.shape(point.rec, point.books), stale } };
      // The newest book is shaped and serialized (by this route's response schema) once per change.
      const text = app.pmtape.latestBodies.body(bodyKey(key, qs.depth, qs.include_orderbook, outcome), point.rec, at.market, stale,
        () => reply.serialize({ data: { ...model.shape(point.rec, point.books), stale } }) as string); // fast-json-stringify: a string
      return reply.type(JSON_TYPE).send(text);
    })();
  });
}
