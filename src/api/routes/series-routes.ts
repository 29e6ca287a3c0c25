// The routes of a family that records metric series (its descriptor's `routes.series`; today
// wallet-prediction, API.md §3): metric time series per outcome, and the trades dataset, which such a
// venue does not publish (always empty for a known market). Mounted by family.ts beside the shared
// market and book routes, under each of the family's prefixes; cursors are bound to
// `<routes.name>.timeseries` and `<routes.name>.trades`.

import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { MetricSample, Recorded } from '../../schema/observation.js';
import { toIso } from '../../schema/time.js';
import type { FamilyDescriptor } from '../../families/descriptor.js';
import type { BookModel } from '../../book/book-model.js';
import { snapshotPage } from '../query/book-pages.js';
import { listParams } from '../query/params.js';
import { listOf, oneOf, queryParam, sampleSchema, typedParams, typedQuery } from '../route-params.js';
import { outcomeOr400 } from './book-routes.js';
import { resolvePathMarket } from '../query/resolve-market.js';
import { pageCursor, resumeOf } from './helpers.js';

export function seriesRoutes(app: FastifyInstance, d: FamilyDescriptor, metrics: readonly [string, ...string[]]): void {
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  const config = { plan: d.plan };
  const params = typedParams(['market_id']);

  api.get(
    '/:market_id/timeseries',
    {
      config,
      schema: {
        description: 'Samples of one metric series of one outcome; the three metrics are never merged.',
        params,
        querystring: typedQuery({
          metric: oneOf(metrics),
          outcome: Type.Optional(queryParam.outcome),
          start_time: Type.Optional(queryParam.start_time),
          end_time: Type.Optional(queryParam.end_time),
          limit: Type.Optional(queryParam.limit),
          cursor: Type.Optional(queryParam.cursor),
          order: Type.Optional(queryParam.order),
        }),
        response: { 200: listOf(sampleSchema) },
      },
    },
    async (req, reply) => {
      const qs = req.query;
      const lp = listParams(qs);
      const at = await resolvePathMarket(app, d, req.params);
      const market = at.market!;
      const label = outcomeOr400(market, qs.outcome) ?? ('outcomes' in market ? market.outcomes[0]?.label : undefined);
      const metric = qs.metric;
      const cq = { ...qs, _market: at.id };
      const resume = resumeOf(app, `${d.routes.name}.timeseries`, cq, lp);
      const reader = await app.pmtape.markets.reader(d.family, 'metrics', at.id);
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
      return { data: page.items, next_cursor: pageCursor(app, req, reply, `${d.routes.name}.timeseries`, cq, page) };
    },
  );

  api.get(
    '/:market_id/trades',
    {
      config,
      schema: {
        description: 'Trades are not recorded for this family: always the empty dataset for a known market.',
        params,
        querystring: typedQuery({
          start_time: Type.Optional(queryParam.start_time),
          end_time: Type.Optional(queryParam.end_time),
          limit: Type.Optional(queryParam.limit),
          cursor: Type.Optional(queryParam.cursor),
          order: Type.Optional(queryParam.order),
        }),
        response: { 200: listOf({ type: 'object' }) },
      },
    },
    async (req) => {
      const qs = req.query;
      const lp = listParams(qs);
      const at = await resolvePathMarket(app, d, req.params);
      // No cursor is ever issued here, so any cursor is checked (and refused when foreign).
      if (lp.cursor !== undefined) app.pmtape.cursors.decode(lp.cursor, `${d.routes.name}.trades`, { ...qs, _market: at.id });
      return { data: [], next_cursor: null };
    },
  );
}
