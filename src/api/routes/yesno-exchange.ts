// The yes/no exchange family (API.md §4, free plan): markets by series/status/window and snapshots
// of one exact ticker in the venue's native text and units (never converted), plus the latest book
// with `as_of` like the other families.

import type { FastifyInstance } from 'fastify';
import { notFound } from '../../errors.js';
import type { YesNoMarket } from '../../schema/market.js';
import type { Recorded, YesNoBook } from '../../schema/observation.js';
import { toIso } from '../../schema/time.js';
import { JSON_TYPE } from '../query/latest-body.js';
import { bookAsOf, snapshotPage, type BookModel } from '../query/book-pages.js';
import { asOfParam, listParams, type Query } from '../query/params.js';
import { listOf, params, q, query, single, yesnoMarketSchema, yesnoSnapshotSchema } from '../schemas.js';
import { YESNO_MAX_DEPTH, yesnoMarketRecord, yesnoSnapshot } from '../query/shapes.js';
import { listPage, nextCursor, overlaps, resumeOf } from './helpers.js';

const FAMILY = 'yesno-exchange';
const depth = { type: 'integer', minimum: 1, maximum: YESNO_MAX_DEPTH, description: 'levels per side, 1..100 (default all, at most 100)' };

export function yesnoModel(ticker: string, opts: { depth?: number; includeOrderbook?: boolean } = {}): BookModel {
  return {
    replay: false,
    candidate: (rec) => rec.type === 'yesno_book',
    produces: () => true,
    shape: (rec) => yesnoSnapshot(ticker, rec as Recorded<YesNoBook>, opts),
  };
}

async function tickerOr404(app: FastifyInstance, pathTicker: string): Promise<string> {
  const m = await app.pmtape.markets.resolve(FAMILY, pathTicker);
  if (m) return m.market.market_id;
  if (await app.pmtape.markets.hasBooks(FAMILY, pathTicker)) return pathTicker;
  throw notFound(`Unknown ticker '${pathTicker.slice(0, 200)}'; list recorded tickers at /v3/yesno-exchange/markets.`);
}

export default async function yesnoRoutes(app: FastifyInstance): Promise<void> {
  const free = { plan: 'free' as const };

  app.get('/markets', {
    config: free,
    schema: {
      description: 'Yes/no markets with their native upstream object.',
      querystring: query({
        series: { type: 'string', minLength: 1, maxLength: 100 },
        status: { type: 'string', minLength: 1, maxLength: 40, description: "the venue's own status word" },
        start_time: q.start_time, end_time: q.end_time, limit: q.limit, cursor: q.cursor, order: q.order,
      }),
      response: { 200: listOf(yesnoMarketSchema) },
    },
  }, async (req) => {
    const qs = req.query as Query;
    const lp = listParams(qs);
    const entries = await app.pmtape.markets.list(FAMILY);
    return listPage(app, 'yesno.markets', qs, entries, (e) => {
      const m = e.market as YesNoMarket;
      return (qs.series === undefined || m.series_ticker === qs.series) && (qs.status === undefined || m.status === qs.status) &&
        overlaps(m.open_time, m.close_time, lp.start, lp.end);
    }, (e) => yesnoMarketRecord(e.market as YesNoMarket), lp);
  });

  app.get('/:market_ticker/snapshots', {
    config: free,
    schema: {
      description: 'Order-book snapshots of one exact ticker, native units untouched.',
      params: params(['market_ticker']),
      querystring: query({
        include_orderbook: { ...q.include_orderbook, default: false }, start_time: q.start_time, end_time: q.end_time,
        limit: q.limit, cursor: q.cursor, order: q.order, depth,
      }),
      response: { 200: listOf(yesnoSnapshotSchema) },
    },
  }, async (req) => {
    const qs = req.query as Query;
    const lp = listParams(qs);
    const ticker = await tickerOr404(app, (req.params as { market_ticker: string }).market_ticker);
    const cq = { ...qs, _market: ticker };
    const resume = resumeOf(app, 'yesno.snapshots', cq, lp);
    const reader = await app.pmtape.markets.reader(FAMILY, 'books', ticker);
    const model = yesnoModel(ticker, { depth: qs.depth as number | undefined, includeOrderbook: qs.include_orderbook === true });
    const page = await snapshotPage(reader, model, { order: lp.order, limit: lp.limit, start: lp.start, end: lp.end, resume });
    return { data: page.items, next_cursor: nextCursor(app, 'yesno.snapshots', cq, page.next) };
  });

  app.get('/:market_ticker/orderbook/latest', {
    config: free,
    schema: {
      description: 'The newest recorded book of a ticker (stale: true when not recorded live), or as of `as_of`.',
      params: params(['market_ticker']),
      querystring: query({ depth, as_of: q.as_of, clock: q.clock, include_orderbook: { ...q.include_orderbook, default: true } }),
      response: { 200: single(yesnoSnapshotSchema) },
    },
  }, async (req, reply) => {
    const qs = req.query as Query;
    const asOf = asOfParam(qs);
    const ticker = await tickerOr404(app, (req.params as { market_ticker: string }).market_ticker);
    const reader = await app.pmtape.markets.reader(FAMILY, 'books', ticker);
    const model = yesnoModel(ticker, { depth: qs.depth as number | undefined, includeOrderbook: qs.include_orderbook !== false });
    const point = asOf === undefined
      ? await app.pmtape.latest.get(`${FAMILY}|${ticker}`, reader, yesnoModel(ticker))
      : await bookAsOf(reader, model, asOf, qs.clock === 'source' ? 'source' : 'receive');
    if (!point) throw notFound(asOf === undefined ? `No book recorded yet for ticker '${ticker}'.` : `No book recorded for ticker '${ticker}' at or before ${toIso(asOf)}.`);
    const live = asOf === undefined ? await app.pmtape.status.isConnected(FAMILY, ticker) : true;
    const stale = point.gapOpen || !live;
    if (asOf !== undefined) return { data: { ...model.shape(point.rec, point.books), stale } };
    // The newest book is shaped and serialized (by this route's response schema) once per change.
    const text = app.pmtape.latestBodies.body(`${FAMILY}|${ticker}|${qs.depth}|${qs.include_orderbook}`, point.rec, null, stale,
      () => reply.serialize({ data: { ...model.shape(point.rec, point.books), stale } }) as string); // fast-json-stringify: a string
    return reply.type(JSON_TYPE).send(text);
  });
}
