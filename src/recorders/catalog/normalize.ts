// catalog mapper (follows shared/venues/clob.md "catalog REST"): one market object of the venue's
// metadata REST → the normalized CoinMarket, decoding the JSON-in-string fields and keeping every
// identifier together; plus the diff that turns two states into one catalogue event. Pure.

import type { CoinMarket, Resolution, MarketStatus } from '../../schema/market.js';
import type { CatalogRules } from '../catalog-diff.js';

// ---- raw upstream shapes (private to this file) ----
interface RawSeries {
  slug?: unknown;
  recurrence?: unknown;
}
interface RawEvent {
  id?: unknown;
  slug?: unknown;
  startTime?: unknown;
  series?: RawSeries[];
  markets?: unknown;
}
interface RawMarket {
  id?: unknown;
  question?: unknown;
  conditionId?: unknown;
  slug?: unknown;
  outcomes?: unknown;
  outcomePrices?: unknown;
  clobTokenIds?: unknown;
  volume?: unknown;
  volumeNum?: unknown;
  liquidity?: unknown;
  liquidityNum?: unknown;
  startDate?: unknown;
  endDate?: unknown;
  eventStartTime?: unknown;
  closedTime?: unknown;
  createdAt?: unknown;
  updatedAt?: unknown;
  active?: unknown;
  closed?: unknown;
  umaResolutionStatus?: unknown;
  events?: RawEvent[];
}

const UPDOWN_SLUG = /^([a-z0-9]+)-updown-(\d+[smhd])-(\d{9,11})$/;
const SERIES_SLUG = /^([a-z0-9]+)-up-or-down-(\d+[smhd])$/;

/** Decodes a field that is a JSON array, or a JSON array encoded in a string. */
export function jsonList(v: unknown): unknown[] | null {
  if (Array.isArray(v)) return v as unknown[];
  if (typeof v !== 'string') return null;
  try {
    const p: unknown = JSON.parse(v);
    return Array.isArray(p) ? (p as unknown[]) : null;
  } catch {
    return null;
  }
}

/** ISO dates, also `2026-09-09 14:25:04+00`, → epoch ms, or null. */
export function parseDate(v: unknown): number | null {
  if (typeof v !== 'string' || v.length < 10) return null;
  let t = v.trim().replace(' ', 'T');
  if (/[+-]\d\d$/.test(t)) t += ':00';
  if (/^\d{4}-\d\d-\d\d$/.test(t)) t += 'T00:00:00Z';
  else if (!/(Z|[+-]\d\d:?\d\d)$/.test(t)) t += 'Z';
  const ms = Date.parse(t);
  return Number.isFinite(ms) ? ms : null;
}

function numOrNull(...vs: unknown[]): number | null {
  for (const v of vs) {
    const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : NaN;
    if (Number.isFinite(n)) return n;
  }
  return null;
}

function idText(v: unknown): string | null {
  if (typeof v === 'string' && v.length > 0) return v;
  if (typeof v === 'number' && Number.isSafeInteger(v)) return String(v);
  return null;
}

/** Coin and window of an up/down market from its slug or its series, or null. */
export function upDownOf(m: { slug?: unknown; events?: RawEvent[] }): { coin: string; window: string; startS: number | null } | null {
  const s = typeof m.slug === 'string' ? UPDOWN_SLUG.exec(m.slug) : null;
  if (s) return { coin: s[1], window: s[2], startS: Number(s[3]) };
  const ser = m.events?.[0]?.series?.[0]?.slug;
  const t = typeof ser === 'string' ? SERIES_SLUG.exec(ser) : null;
  return t ? { coin: t[1], window: t[2], startS: null } : null;
}

/**
 * One catalogue market → CoinMarket, with its status as of `nowMs` (upcoming/open follow the
 * clock; closed/resolved follow the venue). Null when it is not a two-outcome up/down market or
 * lacks identifiers.
 */
export function normalizeCatalogMarket(raw: unknown, nowMs: number): CoinMarket | null {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return null;
  const m = raw as RawMarket;
  const id = idText(m.id);
  const cond = typeof m.conditionId === 'string' && m.conditionId.startsWith('0x') ? m.conditionId : null;
  const labels = jsonList(m.outcomes);
  const tokens = jsonList(m.clobTokenIds);
  const ud = upDownOf(m);
  if (!id || !cond || !labels || !tokens || labels.length !== 2 || tokens.length !== 2 || !ud) return null;
  if (!labels.every((l) => typeof l === 'string') || !tokens.every((t) => idText(t))) return null;
  const outcomes = labels.map((label, i) => ({ label: label, token_id: idText(tokens[i])! }));
  const ev = Array.isArray(m.events) ? m.events[0] : undefined;
  const start = parseDate(m.eventStartTime) ?? parseDate(ev?.startTime) ?? (ud.startS !== null ? ud.startS * 1000 : null);
  const end = parseDate(m.endDate);
  const prices = (jsonList(m.outcomePrices) ?? []).map((p) => Number(p));
  const closed = m.closed === true;
  const uma = typeof m.umaResolutionStatus === 'string' ? m.umaResolutionStatus.toLowerCase() : '';
  let resolution: Resolution | null = null;
  let winning: string | null = null;
  if (closed && prices.length === 2) {
    const w = prices.findIndex((p) => p === 1);
    if (w >= 0 && prices[1 - w] === 0) {
      resolution = 'resolved';
      winning = outcomes[w].label;
    } else if (prices[0] === 0.5 && prices[1] === 0.5 && uma === 'resolved') {
      // 50/50 prices alone may just be a quiet closed market: only a settled one is a push.
      resolution = 'push';
    }
  }
  if (!resolution && uma === 'disputed') resolution = 'disputed';
  else if (!resolution && closed) resolution = 'pending';
  let status: MarketStatus;
  if (resolution === 'resolved' || resolution === 'push') status = 'resolved';
  else if (m.active === false && !closed) status = 'cancelled';
  else if (closed || (end !== null && nowMs >= end)) status = 'closed';
  else if (start !== null && nowMs >= start) status = 'open';
  else status = 'upcoming';
  return {
    family: 'coin',
    market_id: id,
    event_id: idText(ev?.id),
    condition_id: cond,
    slug: typeof m.slug === 'string' ? m.slug : null,
    question: typeof m.question === 'string' ? m.question : '',
    outcomes,
    coin: ud.coin,
    window: ud.window,
    start_time: start,
    end_time: end,
    created_time: parseDate(m.createdAt) ?? parseDate(m.startDate),
    updated_time: parseDate(m.updatedAt),
    status,
    resolution,
    winning_outcome: winning,
    resolved_time: status === 'resolved' ? parseDate(m.closedTime) : null,
    volume: numOrNull(m.volumeNum, m.volume),
    liquidity: numOrNull(m.liquidityNum, m.liquidity),
    native: raw,
  };
}

/** Markets inside a response: an array of markets, of events with `markets`, or one object. */
export function marketsIn(body: unknown): unknown[] {
  const list = Array.isArray(body)
    ? body
    : body && typeof body === 'object' && Array.isArray((body as { data?: unknown }).data)
      ? (body as { data: unknown[] }).data
      : [body];
  const out: unknown[] = [];
  for (const x of list) {
    if (x && typeof x === 'object' && Array.isArray((x as RawEvent).markets)) {
      // An event: its markets do not repeat the event, so give them one (id, series, start).
      const ev = x as RawEvent;
      for (const mk of ev.markets as unknown[]) {
        if (mk && typeof mk === 'object') {
          const mm = mk as RawMarket;
          out.push(mm.events ? mm : { ...mm, events: [{ id: ev.id, slug: ev.slug, startTime: ev.startTime, series: ev.series }] });
        }
      }
    } else if (x && typeof x === 'object') out.push(x);
  }
  return out;
}

/** Fields whose change is a catalogue event (`native` and `updated_time` alone are not). */
export const COIN_CATALOG: CatalogRules<CoinMarket> = {
  tracked: [
    'event_id',
    'condition_id',
    'slug',
    'question',
    'outcomes',
    'coin',
    'window',
    'start_time',
    'end_time',
    'created_time',
    'status',
    'resolution',
    'winning_outcome',
    'resolved_time',
    'volume',
    'liquidity',
  ],
  resolves: (prev, next) => next.status === 'resolved' && prev.status !== 'resolved',
  sourceTs: (m) => m.updated_time,
};
