// Catalogue listings for `pmtape backfill catalog`: pages through each family's upstream listing of
// past and current markets since a date and normalizes them with the recorders' own normalizers and
// catalogue rules (one source of truth for what a market is and what counts as a change). Each
// family descriptor (src/families/) names its source.

import type { Config } from '../config.js';
import type { Family, CatalogEvent } from '../schema/observation.js';
import { catalogChange } from './catalog-diff.js';
import type { CoinMarket, Market, WalletMarket, YesNoMarket } from '../schema/market.js';
import type { LogKey } from '../storage/index.js';
import { RestClient } from './rest.js';
import { catalogKey } from './catalog/feed.js';
import { COIN_CATALOG, marketsIn, normalizeCatalogMarket } from './catalog/normalize.js';
import { yesnoCatalogKey } from './yesno/feed.js';
import { YESNO_CATALOG, eventSeries, marketsPage, normalizeMarket } from './yesno/normalize.js';
import { walletKey } from './wallet/feed.js';
import { API_KEY_HEADER, PATHS, QUERY, TOPIC, UP_DOWN_VARIANT } from './wallet/fields.js';
import { WALLET_CATALOG, listPage, normalizeWalletMarket, topicMarketId } from './wallet/normalize.js';

/** One listing (a series, or the whole wallet catalogue): its markets, or why it failed. */
export interface Listing {
  readonly name: string;
  readonly markets: Market[];
  /** Items the normalizer refused (not up/down, missing identifiers, …). */
  readonly ignored: number;
  readonly error: string | null;
}

export interface Source {
  readonly family: Family;
  /** What the config must name for there to be listings (for the "nothing to list" message). */
  readonly selection: string;
  /** Listing names in the order `list` walks them (for progress). */
  readonly names: readonly string[];
  list(name: string): Promise<Listing>;
  key(m: Market): LogKey;
  /** The catalogue event taking `prev` to `next`, or null when nothing tracked changed. */
  change(prev: Market | null, next: Market, recvTs: number): CatalogEvent | null;
}

/** Bounds a runaway cursor/offset: 200 pages of 100–200 markets per listing. */
const MAX_PAGES = 200;
const WINDOW_MS: Record<string, number> = { '5m': 300_000, '15m': 900_000, '1h': 3_600_000, '4h': 14_400_000 };

function client(config: Config, kind: 'catalog' | 'yesno' | 'wallet', onBad: (why: string) => void): RestClient {
  const up = config.upstreams[kind];
  if (!up.rest) throw new Error(`config: upstreams.${kind}.rest is required to backfill this family`);
  const headers = kind === 'wallet' && up.api_key ? { [API_KEY_HEADER]: up.api_key } : undefined;
  return new RestClient({ baseUrl: up.rest, ratePerS: up.rate_per_s ?? 5, headers, onAttemptError: (e) => onBad(e.message) });
}

const errText = (e: unknown): string => (e as Error).message;

/**
 * `catalog`: `/events?series_slug=` per coin × window, offset paging, twice: the not-yet-closed
 * markets up to the live recorder's lookahead, then the closed ones that ended since `since`.
 */
export function coinSource(config: Config, since: number, onBad: (why: string) => void): Source {
  const rest = client(config, 'catalog', onBad);
  const names = config.coins.flatMap((c) => config.windows.map((w) => `${c}-up-or-down-${w}`));
  return {
    family: 'coin',
    selection: 'coins/windows',
    names,
    key: (m) => catalogKey(m.market_id),
    change: (prev, next, recv) => catalogChange(COIN_CATALOG, prev?.family === 'coin' ? prev : null, next as CoinMarket, recv),
    async list(series) {
      const window = series.split('-').pop() ?? '';
      const now = Date.now();
      const byId = new Map<string, Market>();
      let ignored = 0;
      // Open ones first: a market that closes between the passes is then seen twice (the later,
      // closed state wins) rather than missed by both.
      const passes = [
        {
          closed: 'false',
          end_date_min: new Date(since).toISOString(),
          end_date_max: new Date(now + config.recorders.lookaheadMs + (WINDOW_MS[window] ?? 900_000)).toISOString(),
        },
        { closed: 'true', end_date_min: new Date(since).toISOString(), end_date_max: undefined },
      ];
      try {
        for (const pass of passes) {
          for (let page = 0, offset = 0; page < MAX_PAGES; page++, offset += 100) {
            const body = await rest.getJson('/events', { series_slug: series, ...pass, limit: 100, offset });
            if (!Array.isArray(body)) throw new Error(`/events answered ${JSON.stringify(body).slice(0, 60)} instead of an array`);
            const recv = Date.now();
            for (const raw of marketsIn(body)) {
              const m = normalizeCatalogMarket(raw, recv);
              if (!m || !config.coins.includes(m.coin)) ignored++;
              else byId.set(m.market_id, m);
            }
            if (body.length < 100) break;
          }
        }
      } catch (e) {
        return { name: series, markets: [...byId.values()], ignored, error: errText(e) };
      }
      return { name: series, markets: [...byId.values()], ignored, error: null };
    },
  };
}

/** `yesno`: `/markets?series_ticker=&min_close_ts=` per series, cursor paging, every status. */
export function yesnoSource(config: Config, since: number, onBad: (why: string) => void): Source {
  const rest = client(config, 'yesno', onBad);
  return {
    family: 'yesno-exchange',
    selection: 'series',
    names: config.series,
    key: (m) => yesnoCatalogKey(m.market_id),
    change: (prev, next, recv) => catalogChange(YESNO_CATALOG, prev?.family === 'yesno-exchange' ? prev : null, next as YesNoMarket, recv),
    async list(series) {
      const raws: unknown[] = [];
      let ignored = 0;
      let error: string | null = null;
      try {
        let cursor = '';
        for (let page = 0; page < MAX_PAGES; page++) {
          const body = await rest.getJson('/markets', {
            series_ticker: series,
            min_close_ts: Math.floor(since / 1000),
            limit: 200,
            cursor: cursor || undefined,
          });
          const p = marketsPage(body, onBad);
          if (p === null) throw new Error('/markets answered without a markets array');
          raws.push(...p.markets);
          if (!p.cursor) break;
          cursor = p.cursor;
        }
      } catch (e) {
        error = errText(e);
      }
      // The market may not name its series: map its event through `/events` (as the recorder does).
      const events = new Map<string, string>();
      if (raws.some((r) => typeof r === 'object' && r !== null && (r as { series_ticker?: unknown }).series_ticker === undefined)) {
        try {
          for (const [e, s] of eventSeries(await rest.getJson('/events', { series_ticker: series, limit: 200 }))) events.set(e, s);
        } catch {
          // the ticker prefix is the fallback
        }
      }
      const markets: Market[] = [];
      for (const raw of raws) {
        const m = normalizeMarket(raw, (e) => events.get(e), onBad);
        if (m) markets.push(m);
        else ignored++;
      }
      return { name: series, markets, ignored, error };
    },
  };
}

/** `wallet`: topics joined to markets (cursor paging, as the recorder lists them), ended since `since`. */
export function walletSource(config: Config, since: number, onBad: (why: string) => void): Source {
  const rest = client(config, 'wallet', onBad);
  const listAll = async (path: string): Promise<unknown[]> => {
    const out: unknown[] = [];
    let cursor = '';
    for (let page = 0; page < MAX_PAGES; page++) {
      const p = listPage(await rest.getJson(path, { [QUERY.limit]: 100, [QUERY.cursor]: cursor || undefined }), onBad);
      if (p === null) throw new Error(`${path} answered without a successful data envelope`);
      out.push(...p.items);
      if (!p.cursor) return out;
      cursor = p.cursor;
    }
    return out;
  };
  return {
    family: 'wallet-prediction',
    selection: 'coins/windows',
    names: ['topics'],
    key: (m) => walletKey(m.market_id, 'catalog'),
    change: (prev, next, recv) =>
      catalogChange(WALLET_CATALOG, prev?.family === 'wallet-prediction' ? prev : null, next as WalletMarket, recv),
    async list(name) {
      let topics: unknown[];
      let raws: unknown[];
      try {
        topics = await listAll(PATHS.topics);
        raws = await listAll(PATHS.markets);
      } catch (e) {
        return { name, markets: [], ignored: 0, error: errText(e) };
      }
      const byId = new Map<string, unknown>();
      for (const m of raws) {
        const id = typeof m === 'object' && m !== null ? (m as Record<string, unknown>).id : undefined;
        if (typeof id === 'number' || typeof id === 'string') byId.set(String(id), m);
      }
      const markets: Market[] = [];
      let ignored = 0;
      for (const t of topics) {
        const variant = typeof t === 'object' && t !== null ? (t as Record<string, unknown>)[TOPIC.variant] : undefined;
        const mid = topicMarketId(t);
        const m =
          variant !== undefined && variant !== UP_DOWN_VARIANT
            ? null
            : mid === null || !byId.has(mid)
              ? null
              : normalizeWalletMarket(t, byId.get(mid), onBad);
        if (!m) {
          ignored++;
          continue;
        }
        if (!config.coins.includes(m.coin) || (m.window !== null && !config.windows.includes(m.window))) continue;
        // No date filter upstream: markets that ended before `since` are left out here.
        if (m.end_time !== null && m.end_time < since) continue;
        markets.push(m);
      }
      return { name, markets, ignored, error: null };
    },
  };
}

/** How a family descriptor builds its listing source from the config's upstream and selection. */
export type SourceFactory = (config: Config, since: number, onBad: (why: string) => void) => Source;
