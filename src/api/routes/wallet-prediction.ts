// The wallet-prediction family (API.md §3, paid plan), registered twice by app.ts: under
// `/v3/wallet-prediction` and its alias `/v3/partner-venue`. Both share logical route names, so
// bodies are identical and cursors interchangeable.

import type { FastifyInstance } from 'fastify';
import { invalidParameter, notFound } from '../../errors.js';
import type { WalletMarket } from '../../schema/market.js';
import type { MetricSample, Recorded } from '../../schema/observation.js';
import { toIso } from '../../schema/time.js';
import { JSON_TYPE } from '../query/latest-body.js';
import { bookAsOf, snapshotPage, type BookModel } from '../query/book-pages.js';
import { asOfParam, listParams, type Query } from '../query/params.js';
import { listOf, params, q, query, sampleSchema, single, walletMarketSchema, walletSnapshotSchema } from '../schemas.js';
import { outcomeIndex, walletMarketRecord, walletSnapshot } from '../query/shapes.js';
import { listPage, marketOr404, nextCursor, overlaps, resumeOf } from './helpers.js';

const FAMILY = 'wallet-prediction';
const LIST_URL = '/v3/wallet-prediction/markets';

/** Snapshots of the first outcome's stored book; other outcomes are mirrored when shaped. */
export function walletModel(market: WalletMarket, opts: { depth?: number; outcome?: string; includeOrderbook?: boolean } = {}): BookModel {
  const first = market.outcomes[0]?.token_id;
  return {
    replay: true,
    candidate: (rec) => (rec.type === 'book' || rec.type === 'book_delta') && rec.token_id === first,
    produces: (_rec, changed) => changed.includes(first),
    shape: (rec, books) => walletSnapshot(market, rec, books, opts),
  };
}

function outcomeOr400(market: WalletMarket, label: string | undefined): string | undefined {
  if (label !== undefined && outcomeIndex(market, label) < 0) {
    throw invalidParameter('outcome', `must be one of this market's outcome labels (${market.outcomes.map((o) => o.label).join(', ')})`);
  }
  return label;
}

export default async function walletRoutes(app: FastifyInstance): Promise<void> {
  const paid = { plan: 'paid' as const };

  app.get('/markets', {
    config: paid,
    schema: {
      description: 'Wallet-prediction markets (topics joined to their underlying market), every identifier kept after expiry.',
      querystring: query({ coin: q.coin, window: q.window, status: q.status, start_time: q.start_time, end_time: q.end_time, limit: q.limit, cursor: q.cursor, order: q.order }),
      response: { 200: listOf(walletMarketSchema) },
    },
  }, async (req) => {
    const qs = req.query as Query;
    const lp = listParams(qs);
    const entries = await app.pmtape.markets.list(FAMILY);
    return listPage(app, 'wallet.markets', qs, entries, (e) => {
      const m = e.market as WalletMarket;
      return (qs.coin === undefined || m.coin === qs.coin) && (qs.window === undefined || m.window === qs.window) &&
        (qs.status === undefined || m.status === qs.status) && overlaps(m.start_time, m.end_time, lp.start, lp.end);
    }, (e) => walletMarketRecord(e.market as WalletMarket), lp);
  });

  app.get('/:market_id/orderbook/latest', {
    config: paid,
    schema: {
      description: 'The newest recorded book (stale: true when the recorder is not connected), or the book as of `as_of`.',
      params: params(['market_id']),
      querystring: query({ outcome: q.outcome, depth: q.depth, as_of: q.as_of, clock: q.clock }),
      response: { 200: single(walletSnapshotSchema) },
    },
  }, async (req, reply) => {
    const qs = req.query as Query;
    const { market_id: pathId } = req.params as { market_id: string };
    const asOf = asOfParam(qs);
    const entry = await marketOr404(app, FAMILY, pathId, LIST_URL);
    const market = entry.market as WalletMarket;
    const outcome = outcomeOr400(market, qs.outcome as string | undefined);
    const model = walletModel(market, { depth: qs.depth as number | undefined, outcome });
    const reader = await app.pmtape.markets.reader(FAMILY, 'books', market.market_id);
    const point = asOf === undefined
      ? await app.pmtape.latest.get(`${FAMILY}|${market.market_id}`, reader, walletModel(market))
      : await bookAsOf(reader, model, asOf, qs.clock === 'source' ? 'source' : 'receive');
    if (!point) {
      throw notFound(asOf === undefined ? `No book recorded yet for market '${market.market_id}'.` : `No book recorded for market '${market.market_id}' at or before ${toIso(asOf)}.`);
    }
    const live = asOf === undefined ? await app.pmtape.status.isConnected(FAMILY, market.market_id) : true;
    const stale = point.gapOpen || !live;
    if (asOf !== undefined) return { data: { ...model.shape(point.rec, point.books), stale } };
    // The newest book is shaped and serialized (by this route's response schema) once per change.
    const text = app.pmtape.latestBodies.body(`${FAMILY}|${market.market_id}|${qs.depth}|${outcome === undefined ? '' : `=${outcome}`}`, point.rec, market, stale,
      () => reply.serialize({ data: { ...model.shape(point.rec, point.books), stale } }) as string); // fast-json-stringify: a string
    return reply.type(JSON_TYPE).send(text);
  });

  app.get('/:market_id/snapshots', {
    config: paid,
    schema: {
      description: 'One snapshot per recorded observation (a delta yields the full book after it).',
      params: params(['market_id']),
      querystring: query({
        start_time: q.start_time, end_time: q.end_time, limit: q.limit, cursor: q.cursor, order: q.order,
        depth: q.depth, include_orderbook: { ...q.include_orderbook, default: true }, outcome: q.outcome,
      }),
      response: { 200: listOf(walletSnapshotSchema) },
    },
  }, async (req) => {
    const qs = req.query as Query;
    const lp = listParams(qs);
    const { market_id: pathId } = req.params as { market_id: string };
    const market = (await marketOr404(app, FAMILY, pathId, LIST_URL)).market as WalletMarket;
    const outcome = outcomeOr400(market, qs.outcome as string | undefined);
    const cq = { ...qs, _market: market.market_id };
    const resume = resumeOf(app, 'wallet.snapshots', cq, lp);
    const reader = await app.pmtape.markets.reader(FAMILY, 'books', market.market_id);
    const model = walletModel(market, { depth: qs.depth as number | undefined, outcome, includeOrderbook: qs.include_orderbook !== false });
    const page = await snapshotPage(reader, model, { order: lp.order, limit: lp.limit, start: lp.start, end: lp.end, resume });
    return { data: page.items, next_cursor: nextCursor(app, 'wallet.snapshots', cq, page.next) };
  });

  app.get('/:market_id/timeseries', {
    config: paid,
    schema: {
      description: 'Samples of one metric series of one outcome; the three metrics are never merged.',
      params: params(['market_id']),
      querystring: query({
        metric: { type: 'string', enum: ['chance', 'price', 'last_trade'] }, outcome: q.outcome,
        start_time: q.start_time, end_time: q.end_time, limit: q.limit, cursor: q.cursor, order: q.order,
      }, ['metric']),
      response: { 200: listOf(sampleSchema) },
    },
  }, async (req) => {
    const qs = req.query as Query;
    const lp = listParams(qs);
    const { market_id: pathId } = req.params as { market_id: string };
    const market = (await marketOr404(app, FAMILY, pathId, LIST_URL)).market as WalletMarket;
    const label = outcomeOr400(market, qs.outcome as string | undefined) ?? market.outcomes[0]?.label;
    const metric = qs.metric as string;
    const cq = { ...qs, _market: market.market_id };
    const resume = resumeOf(app, 'wallet.timeseries', cq, lp);
    const reader = await app.pmtape.markets.reader(FAMILY, 'metrics', market.market_id);
    const model: BookModel = {
      replay: false,
      candidate: (rec) => rec.type === 'metric' && rec.metric === metric && rec.outcome === label,
      produces: () => true,
      shape: (rec) => {
        const s = rec as Recorded<MetricSample>;
        return { time: toIso(s.recv_ts), metric: s.metric, outcome: s.outcome, value: s.value, seq: s.seq };
      },
    };
    const page = await snapshotPage(reader, model, { order: lp.order, limit: lp.limit, start: lp.start, end: lp.end, resume });
    return { data: page.items, next_cursor: nextCursor(app, 'wallet.timeseries', cq, page.next) };
  });

  app.get('/:market_id/trades', {
    config: paid,
    schema: {
      description: 'Trades are not recorded for this family: always the empty dataset for a known market.',
      params: params(['market_id']),
      querystring: query({ start_time: q.start_time, end_time: q.end_time, limit: q.limit, cursor: q.cursor, order: q.order }),
      response: { 200: listOf({ type: 'object' }) },
    },
  }, async (req) => {
    const qs = req.query as Query;
    const lp = listParams(qs);
    const { market_id: pathId } = req.params as { market_id: string };
    const market = (await marketOr404(app, FAMILY, pathId, LIST_URL)).market;
    // No cursor is ever issued here, so any cursor is checked (and refused when foreign).
    if (lp.cursor !== undefined) app.pmtape.cursors.decode(lp.cursor, 'wallet.trades', { ...qs, _market: market.market_id });
    return { data: [], next_cursor: null };
  });
}
