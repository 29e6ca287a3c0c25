// The `yesno` venue emulator: the public REST of ../shared/venues/yesno.md on loopback (series,
// events, markets with cursor pagination and filters, order books in the fixed-point and the legacy
// format) with the venue's ~20 reads/s limit answered by 429 + Retry-After, and injectable faults.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FaultDice } from './faults.js';
import type { SimContext, SimMount } from './mount.js';
import { YesNoUniverse, SERIES_RE, type SimMarket } from './yesno-market.js';

export interface YesNoSimOptions {
  readonly seed?: number;
  readonly windowScale?: number;
  /** Series listed without being asked for (any `KX…15M` ticker is served on demand). */
  readonly series?: readonly string[];
  /** Reads per second before 429 (default 20, the venue's basic tier). */
  readonly rateLimitPerS?: number;
  /** Which order-book form markets answer in; `mixed` gives every 4th market the legacy form. */
  readonly bookFormat?: 'fixed' | 'legacy' | 'mixed';
  /** Body-level faults (garbage, stall, drop); the host applies 429/5xx/slow to every mount. */
  readonly dice?: FaultDice;
  readonly now?: () => number;
}

export interface YesNoSim {
  /** Answers one request below the mount prefix (`path` without it); false for an unknown route. */
  http(req: IncomingMessage, res: ServerResponse, path: string, url: URL): boolean;
  readonly stats: { requests: number; rejected429: number; books: number; byPath: Map<string, number> };
  readonly universe: YesNoUniverse;
  close(): void;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const STATUS_FILTER: Record<string, readonly string[]> = {
  unopened: ['initialized'],
  open: ['active'],
  paused: ['inactive'],
  closed: ['closed', 'determined'],
  settled: ['finalized', 'amended'],
};

const iso = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
const dollars = (cents: number): string => (cents / 100).toFixed(4);

function limitParam(q: URLSearchParams, dflt: number, max: number): number {
  const v = q.get('limit');
  if (v === null) return dflt;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1 || n > max) throw new HttpError(400, 'invalid_parameters', `limit must be 1..${max}`);
  return n;
}

function page<T>(items: T[], q: URLSearchParams, dflt: number, max: number): { items: T[]; cursor: string } {
  const limit = limitParam(q, dflt, max);
  let offset = 0;
  const c = q.get('cursor');
  if (c) {
    const m = /^o(\d{1,7})$/.exec(Buffer.from(c, 'base64url').toString('utf8'));
    if (!m) throw new HttpError(400, 'invalid_parameters', 'cursor is invalid');
    offset = Number(m[1]);
  }
  const slice = items.slice(offset, offset + limit);
  const more = offset + limit < items.length;
  return { items: slice, cursor: more ? Buffer.from(`o${offset + limit}`).toString('base64url') : '' };
}

export function createYesNoSim(opts: YesNoSimOptions = {}): YesNoSim {
  const now = opts.now ?? Date.now;
  const universe = new YesNoUniverse({
    seed: opts.seed ?? 1,
    windowScale: opts.windowScale ?? 1,
    stepMs: 2000,
    bookFormat: opts.bookFormat ?? 'mixed',
    keepWindows: 8,
    aheadWindows: 2,
    now,
  });
  const known = new Set(opts.series ?? ['KXBTC15M', 'KXETH15M']);
  const rate = opts.rateLimitPerS ?? 20;
  let tokens = rate;
  let last = now();
  const stats = { requests: 0, rejected429: 0, books: 0, byPath: new Map<string, number>() };
  const pending = new Set<ServerResponse>();

  function marketJson(m: SimMarket): Record<string, unknown> {
    const st = universe.status(m);
    universe.advance(m);
    const c = Math.round(m.p * 100);
    const coin = m.series.slice(2, -3);
    return {
      ticker: m.ticker,
      event_ticker: m.eventTicker,
      market_type: 'binary',
      title: `${coin} price up in next 15 mins?`,
      subtitle: '',
      yes_sub_title: 'Up',
      no_sub_title: 'Down',
      open_time: iso(m.openMs),
      close_time: iso(m.closeMs),
      expected_expiration_time: iso(m.closeMs),
      expiration_time: iso(m.closeMs + 7 * 86_400_000),
      latest_expiration_time: iso(m.closeMs + 7 * 86_400_000),
      status: st.status,
      yes_bid_dollars: dollars(Math.max(1, c - 1)),
      yes_ask_dollars: dollars(Math.min(99, c + 1)),
      no_bid_dollars: dollars(Math.max(1, 99 - c)),
      no_ask_dollars: dollars(Math.min(99, 101 - c)),
      last_price_dollars: dollars(c),
      liquidity_dollars: (m.levels * 123.45).toFixed(4),
      volume_fp: m.volume.toFixed(2),
      volume_24h_fp: m.volume.toFixed(2),
      open_interest_fp: (m.volume / 2).toFixed(2),
      result: st.result,
      ...(st.settled ? { settlement_value_dollars: st.result === 'yes' ? '1.0000' : '0.0000', settlement_ts: iso(m.closeMs + 1000) } : {}),
      floor_strike: m.strike,
      strike_type: 'greater_or_equal',
      can_close_early: false,
      response_price_units: 'usd_cent',
      price_level_structure: 'linear_cent',
    };
  }

  function eventJson(series: string, ms: SimMarket[]): Record<string, unknown> {
    const m = ms[0];
    return {
      event_ticker: m.eventTicker,
      series_ticker: series,
      title: `${series.slice(2, -3)} price in 15 minutes`,
      sub_title: `At ${iso(m.closeMs)}`,
      category: 'Crypto',
      mutually_exclusive: false,
      strike_date: iso(m.closeMs),
    };
  }

  function seriesList(q: URLSearchParams): string[] {
    const s = q.get('series_ticker');
    if (s) return SERIES_RE.test(s) ? [s] : [];
    const e = q.get('event_ticker');
    if (e) return SERIES_RE.test(e.split('-')[0]) ? [e.split('-')[0]] : [];
    return [...known];
  }

  function markets(q: URLSearchParams): Record<string, unknown> {
    const status = q.get('status');
    if (status !== null && !STATUS_FILTER[status])
      throw new HttpError(400, 'invalid_parameters', `status must be one of ${Object.keys(STATUS_FILTER).join(', ')}`);
    const minClose = q.get('min_close_ts') ? Number(q.get('min_close_ts')) * 1000 : -Infinity;
    const maxClose = q.get('max_close_ts') ? Number(q.get('max_close_ts')) * 1000 : Infinity;
    if (Number.isNaN(minClose) || Number.isNaN(maxClose))
      throw new HttpError(400, 'invalid_parameters', 'min_close_ts/max_close_ts must be unix seconds');
    const event = q.get('event_ticker');
    const tickers = q.get('tickers')?.split(',');
    let all = seriesList(q)
      .flatMap((s) => universe.list(s))
      .filter((m) => m.closeMs >= minClose && m.closeMs <= maxClose);
    if (event) all = all.filter((m) => m.eventTicker === event);
    if (tickers) all = all.filter((m) => tickers.includes(m.ticker));
    let json = all.map(marketJson);
    if (status) json = json.filter((m) => STATUS_FILTER[status].includes(m.status as string));
    const p = page(json, q, 100, 1000);
    return { markets: p.items, cursor: p.cursor };
  }

  function events(q: URLSearchParams): Record<string, unknown> {
    const status = q.get('status');
    const nested = q.get('with_nested_markets') === 'true';
    const out: Record<string, unknown>[] = [];
    for (const s of seriesList(q)) {
      for (const m of universe.list(s)) {
        const mj = marketJson(m);
        if (status && !(STATUS_FILTER[status] ?? []).includes(mj.status as string)) continue;
        out.push({ ...eventJson(s, [m]), ...(nested ? { markets: [mj] } : {}) });
      }
    }
    const p = page(out, q, 200, 200);
    return { events: p.items, cursor: p.cursor };
  }

  function orderbook(m: SimMarket, q: URLSearchParams): Record<string, unknown> {
    const d = q.get('depth');
    const depth = d === null ? 0 : Number(d);
    if (!Number.isInteger(depth) || depth < 0 || depth > 100) throw new HttpError(400, 'invalid_parameters', 'depth must be 0..100');
    const b = universe.book(m);
    const cut = <T>(xs: T[]): T[] => (depth > 0 ? xs.slice(-depth) : xs); // best is last: keep the top
    stats.books++;
    const format = q.get('format') ?? (m.legacy ? 'legacy' : 'fixed'); // `format` is an emulator-only switch
    if (format === 'legacy') {
      const ints = (xs: Array<[number, number]>) => cut(xs).map(([c, s]): [number, number] => [c, Math.max(1, Math.round(s))]);
      return { orderbook: { yes: ints(b.yes), no: ints(b.no) } };
    }
    const fp = (xs: Array<[number, number]>) => cut(xs).map(([c, s]) => [dollars(c), s.toFixed(2)]);
    return { orderbook_fp: { yes_dollars: fp(b.yes), no_dollars: fp(b.no) } };
  }

  function route(path: string, q: URLSearchParams): unknown {
    let m: RegExpExecArray | null;
    if (path === '/markets') return markets(q);
    if ((m = /^\/markets\/([^/]+)\/orderbook$/.exec(path))) {
      const mk = universe.byTicker(decodeURIComponent(m[1]));
      if (!mk) throw new HttpError(404, 'not_found', 'market not found');
      return orderbook(mk, q);
    }
    if ((m = /^\/markets\/([^/]+)$/.exec(path))) {
      const mk = universe.byTicker(decodeURIComponent(m[1]));
      if (!mk) throw new HttpError(404, 'not_found', 'market not found');
      return { market: marketJson(mk) };
    }
    if (path === '/events') return events(q);
    if ((m = /^\/events\/([^/]+)$/.exec(path))) {
      const et = decodeURIComponent(m[1]);
      const series = et.split('-')[0];
      const ms = SERIES_RE.test(series) ? universe.list(series).filter((x) => x.eventTicker === et) : [];
      if (ms.length === 0) throw new HttpError(404, 'not_found', 'event not found');
      return { event: eventJson(series, ms), markets: ms.map(marketJson) };
    }
    if ((m = /^\/series\/([^/]+)$/.exec(path))) {
      const t = decodeURIComponent(m[1]);
      if (!SERIES_RE.test(t)) throw new HttpError(404, 'not_found', 'series not found');
      return {
        series: {
          ticker: t,
          title: `${t.slice(2, -3)} price up or down in 15 minutes`,
          frequency: 'fifteen_min',
          category: 'Crypto',
          tags: ['Crypto'],
          settlement_sources: [{ name: 'CF Benchmarks', url: 'https://www.cfbenchmarks.com' }],
        },
      };
    }
    throw new HttpError(404, 'not_found', `no route ${path}`);
  }

  function send(res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
    pending.delete(res);
    if (res.destroyed || res.writableEnded) return;
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(body);
  }

  function answer(req: IncomingMessage, res: ServerResponse, path: string, q: URLSearchParams): void {
    const dice = opts.dice;
    if (dice?.roll('drop')) return void req.socket.destroy();
    if (dice?.roll('stall')) {
      // a silent stall: the socket stays open and nothing comes back; the client's timeout fires
      pending.add(res);
      setTimeout(() => res.destroy(), dice.faults.stallMs).unref();
      return;
    }
    let status = 200;
    let body: string;
    try {
      body = JSON.stringify(route(path, q));
    } catch (e) {
      const he = e instanceof HttpError ? e : new HttpError(500, 'internal', 'internal error');
      status = he.status;
      body = JSON.stringify({ error: { code: he.code, message: he.message } });
    }
    if (dice?.roll('garbage')) body = dice.garble(body);
    send(res, status, body);
  }

  return {
    stats,
    universe,
    http(req, res, rawPath, url) {
      const path = rawPath.replace(/^\/trade-api\/v2(?=\/|$)/, '') || '/';
      stats.requests++;
      const key = path.replace(/\/markets\/[^/]+/, '/markets/:t').replace(/\/(events|series)\/[^/]+/, '/$1/:t');
      stats.byPath.set(key, (stats.byPath.get(key) ?? 0) + 1);
      if (req.method !== 'GET') {
        send(res, 405, JSON.stringify({ error: { code: 'method_not_allowed', message: 'GET only' } }));
        return true;
      }
      if (!/^\/(markets|events|series)(\/|$)/.test(path)) return false;
      // the venue's read limit: a token bucket of `rate` per second
      const t = now();
      tokens = Math.min(rate, tokens + ((t - last) / 1000) * rate);
      last = t;
      if (tokens < 1) {
        stats.rejected429++;
        send(res, 429, JSON.stringify({ error: { code: 'too_many_requests', message: 'too many requests' } }), { 'retry-after': '1' });
        return true;
      }
      tokens -= 1;
      answer(req, res, path, url.searchParams);
      return true;
    },
    close() {
      for (const res of pending) res.destroy();
      pending.clear();
    },
  };
}

/** The `/yesno` mount of `pmtape sim` (REST only; answers under `/yesno` and `/yesno/trade-api/v2`). */
export function yesnoMounts(ctx: SimContext): SimMount[] {
  const series = ['KXBTC15M', 'KXETH15M'];
  const sim = createYesNoSim({ seed: ctx.seed, windowScale: ctx.windowScale, series, dice: ctx.dice('yesno'), now: ctx.now });
  const mount: SimMount & { readonly yesno: YesNoSim } = {
    prefix: '/yesno',
    yesno: sim,
    http: (req, res, path, url) => sim.http(req, res, path, url),
    config: (baseUrl) => ({ upstreams: { yesno: { rest: `${baseUrl}/yesno`, rate_per_s: 10 } }, series }),
    close: () => sim.close(),
  };
  return [mount];
}
