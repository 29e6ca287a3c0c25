// Follows ../shared/venues/yesno.md (the yes/no exchange's public REST: markets, events, order books).
// Pure mapping of raw REST bodies to normalized records: books keep the venue's native text and
// units, best first; markets keep series → event → market tickers. Bad input is reported, never thrown.

import type { Ladder, Level, YesNoBook } from '../../schema/observation.js';
import type { CatalogRules } from '../catalog-diff.js';
import type { YesNoMarket } from '../../schema/market.js';
import { doubleText } from '../../schema/number-text.js';

/** At most this many levels per side are stored (the venue's own depth cap). */
export const MAX_LEVELS = 100;

/** Called once per malformed item with a short reason; the item is skipped. */
export type OnBad = (why: string) => void;
const ignore: OnBad = () => undefined;

// ---- raw upstream shapes (private) ------------------------------------------------------------

/** Fixed-point form: dollar strings and fixed-point counts, ascending, best bid last. */
interface RawOrderbookFp {
  readonly yes_dollars?: readonly (readonly [unknown, unknown])[] | null;
  readonly no_dollars?: readonly (readonly [unknown, unknown])[] | null;
}
/** Legacy form: integer cents and counts (a transitional variant also carried `*_dollars` inside). */
interface RawOrderbookLegacy extends RawOrderbookFp {
  readonly yes?: readonly (readonly [unknown, unknown])[] | null;
  readonly no?: readonly (readonly [unknown, unknown])[] | null;
}
interface RawOrderbookBody {
  readonly orderbook_fp?: RawOrderbookFp | null;
  readonly orderbook?: RawOrderbookLegacy | null;
}
interface RawMarket {
  readonly ticker?: unknown;
  readonly event_ticker?: unknown;
  readonly series_ticker?: unknown;
  readonly title?: unknown;
  readonly status?: unknown;
  readonly open_time?: unknown;
  readonly close_time?: unknown;
  readonly result?: unknown;
  readonly settlement_value_dollars?: unknown;
  readonly settlement_ts?: unknown;
}
interface RawEvent {
  readonly event_ticker?: unknown;
  readonly series_ticker?: unknown;
}

// ---- order books --------------------------------------------------------------------------------

const DOLLARS = /^\d+(\.\d{1,6})?$/;
const COUNT_FP = /^\d+(\.\d{1,6})?$/;

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Integer (cents/counts) as text; legacy sizes are integers but tolerate a fixed-point string. */
function intText(v: unknown): string | null {
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) return String(v);
  if (typeof v === 'string' && /^\d+$/.test(v)) return v;
  return null;
}

/** A size as stored text: fixed-point text byte for byte; a JSON number (a double) as its canonical text. */
function sizeText(v: unknown): string | null {
  if (typeof v === 'string' && COUNT_FP.test(v)) return v;
  if (typeof v === 'number' && Number.isFinite(v) && v >= 0) return doubleText(v);
  return null;
}

/**
 * One side: validates every level, then orders best (highest bid) first and keeps the best 100.
 * Text is copied unchanged; the numeric value is used only to order. A missing side is empty.
 */
function side(raw: unknown, units: 'dollars' | 'cents', name: string): Ladder | string {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) return `${name} is not an array`;
  const levels: Level[] = [];
  const values: number[] = [];
  let ascending = true;
  for (const lv of raw as unknown[]) {
    if (!Array.isArray(lv) || lv.length < 2) return `${name} has a level that is not [price, size]`;
    const price = units === 'cents' ? intText(lv[0]) : typeof lv[0] === 'string' && DOLLARS.test(lv[0]) ? lv[0] : null;
    const size = units === 'cents' ? (intText(lv[1]) ?? sizeText(lv[1])) : sizeText(lv[1]);
    if (price === null || size === null) return `${name} has a malformed level ${JSON.stringify(lv).slice(0, 60)}`;
    const p = Number(price);
    if (units === 'cents' ? p < 0 || p > 100 : p < 0 || p > 1) return `${name} has a price out of range: ${price}`;
    if (values.length > 0 && p <= values[values.length - 1]) ascending = false;
    levels.push([price, size]);
    values.push(p);
  }
  // The venue sends ascending (best last): reverse it. An unordered body is sorted instead (stable,
  // so equal prices keep venue order) so it still comes out best first.
  if (ascending) levels.reverse();
  else {
    const idx = levels.map((_, i) => i).sort((a, b) => values[b] - values[a]);
    const sorted = idx.map((i) => levels[i]);
    levels.length = 0;
    levels.push(...sorted);
  }
  return levels.length > MAX_LEVELS ? levels.slice(0, MAX_LEVELS) : levels;
}

/**
 * `GET /markets/{ticker}/orderbook` body → one `yesno_book` (the body does not name its market:
 * the caller keys it by the ticker it asked for). Fixed-point wins when both forms are present.
 */
export function normalizeOrderbook(raw: unknown, recvTs: number, pollIntervalMs?: number, onBad: OnBad = ignore): YesNoBook[] {
  if (!isObj(raw)) {
    onBad('order book body is not an object');
    return [];
  }
  const body = raw as RawOrderbookBody;
  let units: 'dollars' | 'cents';
  let yesRaw: unknown;
  let noRaw: unknown;
  if (isObj(body.orderbook_fp)) {
    units = 'dollars';
    yesRaw = body.orderbook_fp.yes_dollars;
    noRaw = body.orderbook_fp.no_dollars;
  } else if (isObj(body.orderbook)) {
    const ob = body.orderbook;
    if (ob.yes_dollars !== undefined || ob.no_dollars !== undefined) {
      units = 'dollars';
      yesRaw = ob.yes_dollars;
      noRaw = ob.no_dollars;
    } else {
      units = 'cents';
      yesRaw = ob.yes;
      noRaw = ob.no;
    }
  } else {
    onBad('order book body has neither orderbook_fp nor orderbook');
    return [];
  }
  const yes = side(yesRaw, units, 'yes');
  const no = side(noRaw, units, 'no');
  if (typeof yes === 'string' || typeof no === 'string') {
    onBad(typeof yes === 'string' ? yes : (no as string));
    return [];
  }
  const book: YesNoBook = {
    type: 'yesno_book',
    recv_ts: recvTs,
    source_ts: null,
    units,
    yes,
    no,
    ...(pollIntervalMs !== undefined ? { poll_interval_ms: pollIntervalMs } : {}),
  };
  return [book];
}

// ---- catalogue ----------------------------------------------------------------------------------

function str(v: unknown): string | null {
  return typeof v === 'string' && v.length > 0 ? v : null;
}

function isoMs(v: unknown): number | null {
  if (typeof v !== 'string' || v === '') return null;
  const ms = Date.parse(v);
  return Number.isFinite(ms) ? ms : null;
}

/** Event ticker → its series ticker, from `/events` bodies (the market may not say). */
export type SeriesOf = (eventTicker: string) => string | undefined;

/**
 * A raw market object → `YesNoMarket`. `series_ticker` comes from the market when it carries one,
 * else from its event (`seriesOf`), else from the event ticker's prefix (`KXBTC15M-26AUG030230`).
 */
export function normalizeMarket(raw: unknown, seriesOf: SeriesOf = () => undefined, onBad: OnBad = ignore): YesNoMarket | null {
  if (!isObj(raw)) {
    onBad('market is not an object');
    return null;
  }
  const m = raw as RawMarket;
  const ticker = str(m.ticker);
  const eventTicker = str(m.event_ticker);
  const status = str(m.status);
  if (!ticker || !eventTicker || !status) {
    onBad(`market lacks ticker, event_ticker or status: ${JSON.stringify(raw).slice(0, 80)}`);
    return null;
  }
  const series = str(m.series_ticker) ?? seriesOf(eventTicker) ?? eventTicker.split('-')[0];
  return {
    family: 'yesno-exchange',
    market_id: ticker,
    ticker,
    event_ticker: eventTicker,
    series_ticker: series,
    title: typeof m.title === 'string' ? m.title : '',
    status,
    open_time: isoMs(m.open_time),
    close_time: isoMs(m.close_time),
    result: typeof m.result === 'string' ? m.result : '',
    native: raw,
  };
}

/** `/events` or `/events/{t}` bodies → event ticker → series ticker pairs. */
export function eventSeries(raw: unknown): Array<[string, string]> {
  if (!isObj(raw)) return [];
  const list: unknown[] = Array.isArray(raw.events) ? raw.events : isObj(raw.event) ? [raw.event] : [];
  const out: Array<[string, string]> = [];
  for (const e of list) {
    if (!isObj(e)) continue;
    const ev = e as RawEvent;
    const et = str(ev.event_ticker);
    const st = str(ev.series_ticker);
    if (et && st) out.push([et, st]);
  }
  return out;
}

/** Catalogue rules: prices and volumes move every poll and are not events; settling is a result or settlement. */
export const YESNO_CATALOG: CatalogRules<YesNoMarket> = {
  tracked: [
    'status',
    'result',
    'settlement_value_dollars',
    'settlement_ts',
    'open_time',
    'close_time',
    'title',
    'event_ticker',
    'series_ticker',
  ],
  // Settlement fields exist only in the native object.
  value: (m, f) =>
    f === 'settlement_value_dollars' || f === 'settlement_ts'
      ? isObj(m.native)
        ? (m.native[f] ?? null)
        : null
      : m[f as keyof YesNoMarket],
  resolves: (_prev, next, changed) => {
    const settled = changed.includes('result') || changed.includes('settlement_value_dollars') || changed.includes('settlement_ts');
    return settled && (next.result !== '' || YESNO_CATALOG.value!(next, 'settlement_ts') !== null);
  },
  sourceTs: () => null,
};

/** A `/markets` page → its markets and the next cursor ('' or absent: last page). */
export function marketsPage(raw: unknown, onBad: OnBad = ignore): { markets: unknown[]; cursor: string } | null {
  if (!isObj(raw) || !Array.isArray(raw.markets)) {
    onBad('markets page lacks a markets array');
    return null;
  }
  return { markets: raw.markets, cursor: typeof raw.cursor === 'string' ? raw.cursor : '' };
}

/**
 * Any captured yes/no body → records, for import: an order book (needs `ticker` from the capture
 * line, handled by the caller's key) or a market / markets page (catalogue events vs. `prev`).
 */
export function classify(raw: unknown): 'orderbook' | 'market' | 'markets' | 'events' | 'unknown' {
  if (!isObj(raw)) return 'unknown';
  if ('orderbook_fp' in raw || 'orderbook' in raw) return 'orderbook';
  if (isObj(raw.market)) return 'market';
  if (Array.isArray(raw.markets)) return 'markets';
  if (Array.isArray(raw.events) || isObj(raw.event)) return 'events';
  return 'unknown';
}
