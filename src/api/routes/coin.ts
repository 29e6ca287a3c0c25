// The coin-scoped family (API.md §5, free plan): `/v3/{coin}/markets` and per-market snapshots
// (raw, or sampled on an interval grid with gaps listed), plus the latest book with `as_of`.
// `{market_id}` accepts the market id, condition id or slug.

import type { FastifyInstance } from 'fastify';
import { notFound, PmtapeError } from '../../errors.js';
import type { CoinMarket } from '../../schema/market.js';
import { toIso } from '../../schema/time.js';
import { JSON_TYPE } from '../query/latest-body.js';
import { bookAsOf, snapshotPage, type BookModel } from '../query/book-pages.js';
import { INTERVAL_MS, intervalPage } from '../query/intervals.js';
import { asOfParam, listParams, type Query } from '../query/params.js';
import { coinMarketSchema, coinSnapshotSchema, gapSchema, params, q, query, single, listOf } from '../schemas.js';
import { coinMarketRecord, coinSnapshot, type BookShapeOptions } from '../query/shapes.js';
import { listPage, marketOr404, nextCursor, overlaps, resumeOf } from './helpers.js';

const FAMILY = 'coin';

export function coinModel(market: CoinMarket, opts: BookShapeOptions = {}): BookModel {
  const tokens = new Set(market.outcomes.map((o) => o.token_id));
  return {
    replay: true,
    candidate: (rec) => (rec.type === 'book' || rec.type === 'book_delta') && tokens.has(rec.token_id),
    produces: (_rec, changed) => changed.length > 0,
    shape: (rec, books) => coinSnapshot(market, rec, books, opts),
  };
}

async function coinOr404(app: FastifyInstance, coin: string): Promise<void> {
  if (app.pmtape.config.coins.includes(coin)) return;
  const known = (await app.pmtape.markets.list(FAMILY)).some((e) => (e.market as CoinMarket).coin === coin);
  if (!known) throw notFound(`Unknown coin '${coin.slice(0, 50)}'; recorded coins: ${app.pmtape.config.coins.join(', ')}.`);
}

async function coinMarketOr404(app: FastifyInstance, coin: string, pathId: string): Promise<CoinMarket> {
  await coinOr404(app, coin);
  const m = (await marketOr404(app, FAMILY, pathId, `/v3/${coin}/markets`)).market as CoinMarket;
  if (m.coin !== coin) throw notFound(`Market '${pathId.slice(0, 200)}' is not a ${coin.slice(0, 50)} market; see /v3/${m.coin}/markets.`);
  return m;
}

const snapshotPageSchema = {
  type: 'object',
  properties: { data: { type: 'array', items: { ...coinSnapshotSchema, properties: { ...coinSnapshotSchema.properties, bucket_start: { type: 'string' } } } }, next_cursor: { type: ['string', 'null'] }, gaps: { type: 'array', items: gapSchema } },
  required: ['data', 'next_cursor'],
};

export default async function coinRoutes(app: FastifyInstance): Promise<void> {
  const free = { plan: 'free' as const };

  app.get('/:coin/markets', {
    config: free,
    schema: {
      description: 'Up/down markets of one coin from the catalogue, with the native upstream object.',
      params: params(['coin']),
      querystring: query({ limit: q.limit, cursor: q.cursor, status: q.status, window: q.window, start_time: q.start_time, end_time: q.end_time, order: q.order }),
      response: { 200: listOf(coinMarketSchema) },
    },
  }, async (req) => {
    const qs = req.query as Query;
    const { coin } = req.params as { coin: string };
    await coinOr404(app, coin);
    const lp = listParams(qs);
    const entries = await app.pmtape.markets.list(FAMILY);
    return listPage(app, 'coin.markets', { ...qs, _coin: coin }, entries, (e) => {
      const m = e.market as CoinMarket;
      return m.coin === coin && (qs.status === undefined || m.status === qs.status) && (qs.window === undefined || m.window === qs.window) &&
        overlaps(m.start_time, m.end_time, lp.start, lp.end);
    }, (e) => coinMarketRecord(e.market as CoinMarket), lp);
  });

  app.get('/:coin/markets/:market_id/snapshots', {
    config: free,
    schema: {
      description: 'Book snapshots of one market: every observation (interval=raw) or one per bucket; uncovered buckets are listed in gaps.',
      params: params(['coin', 'market_id']),
      querystring: query({
        include_orderbook: { ...q.include_orderbook, default: false },
        interval: { type: 'string', enum: ['raw', '1s', '1m', '5m', '1h'], default: 'raw' },
        start_time: q.start_time, end_time: q.end_time, limit: q.limit, cursor: q.cursor, order: q.order, depth: q.depth,
      }),
      response: { 200: snapshotPageSchema },
    },
  }, async (req) => {
    const qs = req.query as Query;
    const lp = listParams(qs);
    const { coin, market_id: pathId } = req.params as { coin: string; market_id: string };
    const market = await coinMarketOr404(app, coin, pathId);
    const cq = { ...qs, _market: market.market_id };
    const reader = await app.pmtape.markets.reader(FAMILY, 'books', market.market_id);
    const shape = { depth: qs.depth as number | undefined, includeOrderbook: qs.include_orderbook === true };
    if (qs.interval === 'raw' || qs.interval === undefined) {
      const resume = resumeOf(app, 'coin.snapshots', cq, lp);
      const page = await snapshotPage(reader, coinModel(market, shape), { order: lp.order, limit: lp.limit, start: lp.start, end: lp.end, resume });
      return { data: page.items, next_cursor: nextCursor(app, 'coin.snapshots', cq, page.next) };
    }
    let resume: number | undefined;
    if (lp.cursor !== undefined) {
      const pos = app.pmtape.cursors.decode(lp.cursor, 'coin.snapshots', cq);
      if (typeof pos.bucket !== 'number') throw new PmtapeError('invalid_cursor', "Parameter 'cursor' does not belong to this route.");
      resume = pos.bucket;
    }
    const page = await intervalPage(reader, market, {
      intervalMs: INTERVAL_MS[qs.interval as string], order: lp.order, limit: lp.limit, start: lp.start, end: lp.end, resume,
      now: Date.now(), connected: await app.pmtape.status.isConnected(FAMILY, market.market_id),
    }, shape);
    return { data: page.items, next_cursor: nextCursor(app, 'coin.snapshots', cq, page.next), gaps: page.gaps };
  });

  app.get('/:coin/markets/:market_id/orderbook/latest', {
    config: free,
    schema: {
      description: 'The newest recorded books of a market (stale: true when not recorded live), or as of `as_of`.',
      params: params(['coin', 'market_id']),
      querystring: query({ depth: q.depth, as_of: q.as_of, clock: q.clock, include_orderbook: { ...q.include_orderbook, default: true } }),
      response: { 200: single(coinSnapshotSchema) },
    },
  }, async (req, reply) => {
    const qs = req.query as Query;
    const asOf = asOfParam(qs);
    const { coin, market_id: pathId } = req.params as { coin: string; market_id: string };
    const market = await coinMarketOr404(app, coin, pathId);
    const reader = await app.pmtape.markets.reader(FAMILY, 'books', market.market_id);
    const model = coinModel(market, { depth: qs.depth as number | undefined, includeOrderbook: qs.include_orderbook !== false });
    const point = asOf === undefined
      ? await app.pmtape.latest.get(`${FAMILY}|${market.market_id}`, reader, coinModel(market))
      : await bookAsOf(reader, model, asOf, qs.clock === 'source' ? 'source' : 'receive');
    if (!point) throw notFound(asOf === undefined ? `No book recorded yet for market '${market.market_id}'.` : `No book recorded for market '${market.market_id}' at or before ${toIso(asOf)}.`);
    const live = asOf === undefined ? await app.pmtape.status.isConnected(FAMILY, market.market_id) : true;
    const stale = point.gapOpen || !live;
    if (asOf !== undefined) return { data: { ...model.shape(point.rec, point.books), stale } };
    // The newest book is shaped and serialized (by this route's response schema) once per change.
    const text = app.pmtape.latestBodies.body(`${FAMILY}|${market.market_id}|${qs.depth}|${qs.include_orderbook}`, point.rec, market, stale,
      () => reply.serialize({ data: { ...model.shape(point.rec, point.books), stale } }) as string); // fast-json-stringify: a string
    return reply.type(JSON_TYPE).send(text);
  });
}
