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
import { oneOf, queryParam, typedParams, typedQuery } from '../route-params.js';
import { candlesPageSchema } from '../response-schemas.js';
import { nextCursor } from './helpers.js';
import { outcomeOr400 } from './book-routes.js';
import { resolvePathMarket } from '../query/resolve-market.js';

const INTERVALS = Object.keys(CANDLE_INTERVALS);

export function candleRoutes(app: FastifyInstance, d: FamilyDescriptor): void {
  const r = d.routes;
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  const route = `${r.name}.candles`;
  const querystring = typedQuery({
    interval: oneOf(INTERVALS, { description: 'candle length (required)' }),
    start_time: Type.Optional(queryParam.start_time),
    end_time: Type.Optional(queryParam.end_time),
    limit: Type.Optional(queryParam.limit),
    cursor: Type.Optional(queryParam.cursor),
    order: Type.Optional(queryParam.order),
    outcome: Type.Optional(queryParam.outcome),
  });

  api.get(
    `${r.marketPath}/candles`,
    {
      config: { plan: d.plan },
      schema: {
        description: [
          `Candles of one ${r.noun} (${INTERVALS.join(', ')}): open/high/low/close of the mid and of the last trade,`,
          'best bid and ask target the close, volume, trade count and the seconds of the candle the book was not valid;',
          "a candle wholly inside a gap is absent. The market's status, resolution and winning outcome are beside them.",
        ].join(' '),
        params: typedParams([...(r.scope ? [r.scope.param] : []), r.idParam]),
        querystring,
        // The assertion keeps the type provider from typing the handler's reply from this JSON schema (the build's tsc needs it).
        // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion
        response: { 200: candlesPageSchema as object },
      },
    },
    async (req) => {
      const query = req.query;
      const list = listParams(query);
      const target = await resolvePathMarket(app, d, req.params);
      // Candles are per outcome in every family (coin snapshots carry every book target once); a yes/no
      // market's one series is its `yes` side.
      const outcome = outcomeOr400(target.market, query.outcome);
      if (outcome !== undefined && (target.market === null || !('outcomes' in target.market)) && outcome !== 'yes') {
        throw invalidParameter('outcome', "must be 'yes' (a yes/no market's candles are of its yes side)");
      }
      const cursorScope = { ...query, _market: target.id };
      let resume: number | undefined;
      if (list.cursor !== undefined) {
        const pos = app.pmtape.cursors.decode(list.cursor, route, cursorScope);
        if (typeof pos.bucket !== 'number') throw new PmtapeError('invalid_cursor', "Parameter 'cursor' does not belong to this route.");
        resume = pos.bucket;
      }
      const reader = await app.pmtape.markets.reader(d.family, 'books', target.id);
      const outcomes = target.market !== null && 'outcomes' in target.market ? target.market.outcomes : [];
      const page = await candlePage(await reader.view(), {
        family: d.family,
        market: target.id,
        outcomes,
        outcome,
        intervalMs: CANDLE_INTERVALS[query.interval],
        order: list.order,
        limit: list.limit,
        start: list.start,
        end: list.end,
        resume,
      });
      const o = marketOutcome(target.market);
      return {
        data: page.items.map((c) => candleJson(d.family, c)),
        next_cursor: nextCursor(app, route, cursorScope, page.next),
        market: { ...o, resolved_time: o.resolved_time === null ? null : toIso(o.resolved_time) },
      };
    },
  );
}
