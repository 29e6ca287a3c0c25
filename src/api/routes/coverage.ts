// `GET /v3/coverage` (API.md §6, free plan). With `market_id` (or `ticker`): one object with the
// first/last record per dataset and the books' recorded intervals and gaps (with reasons). Without:
// a paginated list of every catalogued market with its per-dataset first/last times.

import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { invalidParameter, notFound, PmtapeError } from '../../errors.js';
import { FAMILIES, type Family } from '../../schema/observation.js';
import { overlaps } from '../../schema/time.js';
import { familyOf } from '../../families/registry.js';
import { planAllows } from '../plugins/auth.js';
import type { Plan } from '../plugins/keys.js';
import { clipCoverage, clipSources } from '../query/coverage.js';
import { listParams } from '../query/params.js';
import { coverageSchema, listOf, oneOf, queryParam, typedQuery } from '../route-params.js';
import type { IndexedMarket } from '../query/markets-index.js';

/** The two answers: one market's coverage, or a page of the list. */
const ONE = { type: 'object', properties: { data: coverageSchema }, required: ['data'], additionalProperties: false };
const LIST: { [key: string]: unknown } = listOf(coverageSchema) as { [key: string]: unknown };

export default async function coverageRoutes(app: FastifyInstance): Promise<void> {
  const { markets, coverage: cache } = app.pmtape;

  // A family's coverage (its market ids and ranges) is part of the family: a key whose plan does not
  // include the family (the descriptor's plan) reads none of it, as on the family's own routes.
  const planRequired = (f: Family, plan: Plan): PmtapeError =>
    new PmtapeError(
      'plan_required',
      `The ${f} family needs the ${familyOf(f).plan} plan, its coverage too; this key is on the ${plan} plan.`,
    );
  const readable = (plan: Plan): Family[] => FAMILIES.filter((f) => planAllows(plan, familyOf(f).plan));

  async function findMarket(family: Family | undefined, id: string): Promise<{ family: Family; market: string } | null> {
    for (const f of family ? [family] : FAMILIES) {
      const m = await markets.resolve(f, id);
      if (m) return { family: f, market: m.market.market_id };
      if (await markets.hasBooks(f, id)) return { family: f, market: id };
    }
    return null;
  }

  app.withTypeProvider<TypeBoxTypeProvider>().get(
    '/coverage',
    {
      config: { plan: 'free', expensive: true },
      schema: {
        description: 'Recorded intervals and gaps (with reasons) and first/last recorded time per dataset.',
        querystring: typedQuery({
          family: Type.Optional(oneOf(FAMILIES)),
          market_id: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
          ticker: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
          start_time: Type.Optional(queryParam.start_time),
          end_time: Type.Optional(queryParam.end_time),
          limit: Type.Optional(queryParam.limit),
          cursor: Type.Optional(queryParam.cursor),
        }),
        response: { 200: { oneOf: [ONE, LIST] } },
      },
    },
    async (req, reply) => {
      const qs = req.query;
      const lp = listParams(qs);
      const family = qs.family;
      const plan = req.apiKey?.plan ?? 'free';
      if (family !== undefined && !planAllows(plan, familyOf(family).plan)) throw planRequired(family, plan);
      if (qs.market_id !== undefined && qs.ticker !== undefined) throw invalidParameter('ticker', 'cannot be combined with market_id');
      const id = qs.market_id ?? qs.ticker;
      if (id !== undefined) {
        if (lp.cursor !== undefined)
          throw new PmtapeError('invalid_cursor', "Parameter 'cursor' does not apply to a single market's coverage.");
        const found = await findMarket(family, id);
        if (!found)
          throw notFound(`Unknown market '${id.slice(0, 200)}'; list markets with /v3/coverage${family ? `?family=${family}` : ''}.`);
        if (!planAllows(plan, familyOf(found.family).plan)) throw planRequired(found.family, plan);
        const cov = await cache.get(found.family, found.market, (s) => markets.reader(found.family, s, found.market));
        const live = await app.pmtape.status.isConnected(found.family, found.market);
        const b = cov.datasets.books;
        let clipped = {
          intervals: [] as { start: string; end: string }[],
          gaps: [] as { start: string; end: string | null; reason: string }[],
        };
        if (b) {
          const from = Math.max(lp.start ?? 0, Date.parse(b.first_time));
          const to = Math.min(lp.end ?? Infinity, live ? Date.now() : Date.parse(b.last_time));
          if (from < to) clipped = clipCoverage(cov.gaps, from, to);
        }
        // A merged history names the recorder of each interval; a single recorder's has no `sources`.
        const sources = clipSources(clipped.intervals, cov.sources ?? []);
        return {
          data: {
            family: found.family,
            market_id: found.market,
            datasets: cov.datasets,
            intervals: clipped.intervals,
            gaps: clipped.gaps,
            ...(sources.length ? { sources } : {}),
            connected: live,
          },
        };
      }
      // The list's own serializer, not the `oneOf`'s: that one picks its branch by validating the
      // whole answer with ajv, which compiled a validator on a process's first page (a third of a
      // cold page's CPU) and validated every market of every page. Same schema branch, same bytes.
      reply.serializer(reply.getSerializationFunction(LIST) ?? reply.compileSerializationSchema(LIST));
      // The list: families in contract order, markets in listing order; the cursor is the last key.
      let after: { f: number; ts: number; id: string } | null = null;
      if (lp.cursor !== undefined) {
        const pos = app.pmtape.cursors.decode(lp.cursor, 'coverage.list', qs);
        if (typeof pos.f !== 'number' || typeof pos.ts !== 'number' || typeof pos.id !== 'string')
          throw new PmtapeError('invalid_cursor', "Parameter 'cursor' does not belong to this route.");
        after = { f: pos.f, ts: pos.ts, id: pos.id };
      }
      const data: Record<string, unknown>[] = [];
      let last: { f: number; e: IndexedMarket } | null = null;
      for (let fi = 0; fi < FAMILIES.length; fi++) {
        const f = FAMILIES[fi];
        if (family && f !== family) continue;
        if (!readable(plan).includes(f)) continue;
        if (after && fi < after.f) continue;
        for (const e of await markets.list(f)) {
          if (after && fi === after.f && (e.first_ts < after.ts || (e.first_ts === after.ts && e.market.market_id <= after.id))) continue;
          if (data.length === lp.limit) {
            return {
              data,
              next_cursor: app.pmtape.cursors.encode('coverage.list', qs, {
                f: last!.f,
                ts: last!.e.first_ts,
                id: last!.e.market.market_id,
              }),
            };
          }
          const cov =
            cache.getNow(f, e.market.market_id) ??
            (await cache.get(f, e.market.market_id, (s) => markets.reader(f, s, e.market.market_id), false));
          const spans = Object.values(cov.datasets).filter((d) => d !== null);
          if (
            (lp.start !== undefined || lp.end !== undefined) &&
            !spans.some((d) => overlaps(Date.parse(d.first_time), Date.parse(d.last_time), lp.start, lp.end))
          )
            continue;
          data.push({ family: f, market_id: e.market.market_id, datasets: cov.datasets });
          last = { f: fi, e };
        }
      }
      return { data, next_cursor: null };
    },
  );
}
