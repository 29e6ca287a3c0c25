// Emulated `catalog` REST (shared/venues/clob.md): `/events` and `/markets` over the market model,
// in the venue's shape — JSON-in-string `outcomes`/`outcomePrices`/`clobTokenIds`, ISO dates,
// `closed` flipping after the window, resolution through `outcomePrices` ["1","0"].

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { MarketModel, SimMarket } from './market-model.js';
import { sendJson, type SimMount } from './mount.js';

const iso = (ms: number): string => new Date(ms).toISOString();
/** The venue's other date style, e.g. `2026-09-09 14:25:04+00`. */
const pgDate = (ms: number): string => `${iso(ms).slice(0, 19).replace('T', ' ')}+00`;

/** A market as the catalogue REST shows it at `now`. */
export function gammaMarket(model: MarketModel, m: SimMarket, now: number): Record<string, unknown> {
  const closed = now >= m.closeMs;
  const resolved = now >= m.resolveMs && m.endPrice !== null && m.startPrice !== null;
  const upWins = resolved && m.endPrice! >= m.startPrice!;
  const fair = m.fair / 100;
  const prices = resolved ? (upWins ? ['1', '0'] : ['0', '1']) : [fair.toFixed(3), (1 - fair).toFixed(3)];
  const coinName = m.coin.toUpperCase();
  const series = {
    id: String(1000 + m.window.length),
    slug: `${m.coin}-up-or-down-${m.window}`,
    ticker: `${m.coin}-up-or-down-${m.window}`,
    recurrence: m.window,
    title: `${coinName} Up or Down ${m.window}`,
  };
  const liquidity = model.liquidity(m);
  return {
    id: m.id,
    question: `${coinName} Up or Down - ${iso(m.startMs).slice(0, 16)} to ${iso(m.endMs).slice(11, 16)} UTC`,
    conditionId: m.conditionId,
    slug: m.slug,
    questionID: m.questionId,
    outcomes: JSON.stringify(['Up', 'Down']),
    outcomePrices: JSON.stringify(prices),
    clobTokenIds: JSON.stringify(m.tokens),
    volume: String(Math.round(m.volume * 1e6) / 1e6),
    volumeNum: Math.round(m.volume * 1e6) / 1e6,
    liquidity: String(liquidity),
    liquidityNum: liquidity,
    startDate: iso(m.listMs),
    endDate: iso(m.endMs),
    eventStartTime: iso(m.startMs),
    createdAt: iso(m.createdMs),
    updatedAt: iso(Math.min(now, Math.max(m.updatedMs, closed ? m.closeMs : 0, resolved ? m.resolveMs : 0))),
    ...(closed ? { closedTime: pgDate(m.closeMs) } : {}),
    // A cancelled market is deactivated without ever closing or resolving.
    active: !model.cancelled(m, now),
    closed: closed && !model.cancelled(m, now),
    acceptingOrders: !closed && now < m.endMs && !model.cancelled(m, now),
    enableOrderBook: true,
    orderPriceMinTickSize: 0.01,
    negRisk: false,
    umaResolutionStatus: resolved ? 'resolved' : closed ? 'proposed' : '',
    bestBid: Math.max(0, (m.fair - 1) / 100),
    bestAsk: Math.min(1, (m.fair + 1) / 100),
    lastTradePrice: m.lastTrade === null ? 0 : m.lastTrade / 100,
    events: [{ id: m.eventId, slug: m.slug, ticker: m.slug, startTime: iso(m.startMs), seriesSlug: series.slug, series: [series] }],
  };
}

function matches(model: MarketModel, m: SimMarket, q: URLSearchParams, now: number): boolean {
  if (m.listMs > now) return false;
  const slug = q.get('slug');
  if (slug && slug !== m.slug) return false;
  const ser = q.get('series_slug');
  if (ser && ser !== `${m.coin}-up-or-down-${m.window}`) return false;
  const active = q.get('active');
  if (active === 'true' && model.cancelled(m, now)) return false;
  if (active === 'false' && !model.cancelled(m, now)) return false;
  const closed = q.get('closed');
  if (closed === 'true' && now < m.closeMs) return false;
  if (closed === 'false' && now >= m.closeMs) return false;
  const range = (name: string, v: number): boolean => {
    const lo = q.get(`${name}_min`);
    const hi = q.get(`${name}_max`);
    if (lo && v < Date.parse(lo)) return false;
    if (hi && v > Date.parse(hi)) return false;
    return true;
  };
  return range('end_date', m.endMs) && range('start_date', m.listMs) && model.markets.has(m.id);
}

export function catalogMount(model: MarketModel): SimMount {
  const page = (q: URLSearchParams, list: unknown[]): unknown[] => {
    const limit = Math.min(500, Math.max(1, Number(q.get('limit') ?? 100) || 100));
    const offset = Math.max(0, Number(q.get('offset') ?? 0) || 0);
    return list.slice(offset, offset + limit);
  };
  return {
    prefix: '/catalog',
    async http(req: IncomingMessage, res: ServerResponse, path: string, url: URL) {
      if (req.method !== 'GET') return false;
      const now = Date.now();
      model.refresh(now);
      const q = url.searchParams;
      const hits = [...model.markets.values()]
        .filter((m) => matches(model, m, q, now))
        .sort((a, b) => a.endMs - b.endMs || a.id.localeCompare(b.id));
      if (path === '/markets') {
        sendJson(
          res,
          200,
          page(
            q,
            hits.map((m) => gammaMarket(model, m, now)),
          ),
        );
        return true;
      }
      if (path === '/events') {
        sendJson(
          res,
          200,
          page(
            q,
            hits.map((m) => {
              const gm = gammaMarket(model, m, now);
              const ev = (gm.events as Record<string, unknown>[])[0];
              const { events: _drop, ...market } = gm;
              return { ...ev, title: gm.question, endDate: gm.endDate, closed: gm.closed, active: true, markets: [market] };
            }),
          ),
        );
        return true;
      }
      return false;
    },
    config: (base) => ({ upstreams: { catalog: { rest: `${base}/catalog`, rate_per_s: 50 } } }),
  };
}
