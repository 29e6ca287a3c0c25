// `GET …/candles` of every family, beside its book routes and in their URL style (API.md §10): one
// outcome's candles over a window, with the market's resolution beside them. Thin: the candles are
// storage/candles/ (the same implementation as the `candles` dataset and replay's `candle_1m`).

import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { invalidParameter, PmtapeError } from '../../errors.js';
import { marketOutcome } from '../../schema/market-outcome.js';
import { toIso } from '../../schema/time.js';
import type { FamilyDescriptor } from '../../families/descriptor.js';
import { CANDLE_INTERVALS } from '../../storage/index.js';
import { candleJson, candlePage } from '../query/candles.js';
import { listParams } from '../query/params.js';
import { oneOf, q, typedParams, typedQuery } from '../schemas.js';
import { candlesPageSchema } from '../json-schemas.js';
import { nextCursor } from './helpers.js';
import { outcomeOr400, resolveMarket } from './book-routes.js';

const INTERVALS = Object.keys(CANDLE_INTERVALS);

export function candleRoutes(app: FastifyInstance, d: FamilyDescriptor): void {
  const r = d.routes;
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  const route = `${r.name}.candles`;
  const querystring = typedQuery({
    interval: oneOf(INTERVALS, { description: 'candle length (required)' }),
    start_time: Type.Optional(q.start_time), end_time: Type.Optional(q.end_time), limit: Type.Optional(q.limit),
    cursor: Type.Optional(q.cursor), order: Type.Optional(q.order), outcome: Type.Optional(q.outcome),
  });

  api.get(`${r.marketPath}/candles`, {
    config: { plan: d.plan },
    schema: {
      description: [
        `Candles of one ${r.noun} (${INTERVALS.join(', ')}): open/high/low/close of the mid and of the last trade,`,
        'best bid and ask at the close, volume, trade count and the seconds of the candle the book was not valid;',
        "a candle wholly inside a gap is absent. The market's status, resolution and winning outcome are beside them.",
      ].join(' '),
      params: typedParams([...(r.scope ? [r.scope.param] : []), r.idParam]),
      querystring,
      response: { 200: candlesPageSchema as object },
    },
  }, async (req) => {
    const qs = req.query;
    const lp = listParams(qs);
    const at = await resolveMarket(app, d, req.params);
    // Candles are per outcome in every family (coin snapshots carry every book at once); a yes/no
    // market's one series is its `yes` side.
    const outcome = outcomeOr400(at.market, qs.outcome);
    if (outcome !== undefined && (at.market === null || !('outcomes' in at.market)) && outcome !== 'yes') {
      throw invalidParameter('outcome', "must be 'yes' (a yes/no market's candles are of its yes side)");
    }
    const cq = { ...qs, _market: at.id };
    let resume: number | undefined;
    if (lp.cursor !== undefined) {
      const pos = app.pmtape.cursors.decode(lp.cursor, route, cq);
      if (typeof pos.bucket !== 'number') throw new PmtapeError('invalid_cursor', "Parameter 'cursor' does not belong to this route.");
      resume = pos.bucket;
    }
    const reader = await app.pmtape.markets.reader(d.family, 'books', at.id);
    const outcomes = at.market !== null && 'outcomes' in at.market ? at.market.outcomes : [];
    const page = await candlePage(await reader.view(), {
      family: d.family, market: at.id, outcomes, outcome, intervalMs: CANDLE_INTERVALS[qs.interval], order: lp.order, limit: lp.limit,
      start: lp.start, end: lp.end, resume,
    });
    const o = marketOutcome(at.market);
    return {
      data: page.items.map((c) => candleJson(d.family, c)),
      next_cursor: nextCursor(app, route, cq, page.next),
      market: { ...o, resolved_time: o.resolved_time === null ? null : toIso(o.resolved_time) },
    };
  });
}
