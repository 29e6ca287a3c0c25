// clob market-WebSocket mapper (follows shared/venues/clob.md "Market WebSocket"): one raw frame →
// zero or more normalized observations. Pure and synchronous. `book` → book (best first), `price_change`
// (current and legacy forms) → one book_delta per token, `last_trade_price` → trade,
// `tick_size_change` → tick_size; PONG/acks → nothing; unknown types are counted and ignored.

import type { BookDelta, BookSnapshot, Level, Observation, TickSizeChange, Trade } from '../../schema/observation.js';

// ---- raw upstream shapes (private to this file) ----
interface RawLevel {
  price?: unknown;
  size?: unknown;
}
interface RawBook {
  event_type: 'book';
  asset_id?: unknown;
  market?: unknown;
  bids?: unknown;
  asks?: unknown;
  buys?: unknown;
  sells?: unknown;
  timestamp?: unknown;
  hash?: unknown;
}
interface RawChange {
  asset_id?: unknown;
  price?: unknown;
  size?: unknown;
  side?: unknown;
  best_bid?: unknown;
  best_ask?: unknown;
  hash?: unknown;
}
interface RawPriceChange {
  event_type: 'price_change';
  market?: unknown;
  asset_id?: unknown;
  timestamp?: unknown;
  hash?: unknown;
  price_changes?: unknown;
  changes?: unknown;
}
interface RawTrade {
  event_type: 'last_trade_price';
  asset_id?: unknown;
  price?: unknown;
  size?: unknown;
  side?: unknown;
  fee_rate_bps?: unknown;
  timestamp?: unknown;
  transaction_hash?: unknown;
}
interface RawTick {
  event_type: 'tick_size_change';
  asset_id?: unknown;
  old_tick_size?: unknown;
  new_tick_size?: unknown;
  timestamp?: unknown;
}

/** Per-frame tallies the feed turns into counters. */
export interface ClobStats {
  ok: number;
  ignored: number;
  unknown: number;
  malformed: number;
}

export const newStats = (): ClobStats => ({ ok: 0, ignored: 0, unknown: 0, malformed: 0 });

/** Event types that are known but carry nothing we store (custom-feature extras). */
const IGNORED_TYPES = new Set(['best_bid_ask', 'new_market', 'market_resolved']);

const PRICE_RE = /^(?:0?\.\d+|[01](?:\.\d*)?)$/;
const SIZE_RE = /^(?:\d+(?:\.\d*)?|\.\d+)$/;

function isPrice(v: unknown): v is string {
  return typeof v === 'string' && PRICE_RE.test(v) && Number(v) <= 1;
}
function isSize(v: unknown): v is string {
  return typeof v === 'string' && SIZE_RE.test(v);
}
function isId(v: unknown): v is string {
  return typeof v === 'string' && v.length > 0 && v.length <= 200;
}
function ms(v: unknown): number | null {
  const n = typeof v === 'string' ? Number(v) : typeof v === 'number' ? v : NaN;
  return Number.isSafeInteger(n) && n > 0 ? n : null;
}

/** Upstream levels (any order) → best first: bids high→low, asks low→high. Null if malformed. */
function ladder(raw: unknown, side: 'bid' | 'ask'): Level[] | null {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) return null;
  const out: Array<[number, Level]> = [];
  for (const l of raw as RawLevel[]) {
    if (!l || !isPrice(l.price) || !isSize(l.size)) return null;
    if (Number(l.size) === 0) continue;
    out.push([Number(l.price), [l.price, l.size]]);
  }
  out.sort(side === 'bid' ? (a, b) => b[0] - a[0] : (a, b) => a[0] - b[0]);
  return out.map((e) => e[1]);
}

function mapBook(m: RawBook, recvTs: number, s: ClobStats): BookSnapshot[] {
  const bids = ladder(m.bids ?? m.buys, 'bid');
  const asks = ladder(m.asks ?? m.sells, 'ask');
  if (!isId(m.asset_id) || !bids || !asks) {
    s.malformed++;
    return [];
  }
  s.ok++;
  return [
    {
      type: 'book',
      recv_ts: recvTs,
      source_ts: ms(m.timestamp),
      origin: 'ws',
      token_id: m.asset_id,
      units: 'decimal',
      bids,
      asks,
      ...(typeof m.hash === 'string' ? { hash: m.hash } : {}),
    },
  ];
}

interface PriceGroup {
  token: string;
  changes: BookDelta['changes'][number][];
  best_bid: string | undefined;
  best_ask: string | undefined;
}

function side(v: unknown): 'bid' | 'ask' | null {
  return v === 'BUY' ? 'bid' : v === 'SELL' ? 'ask' : null;
}

function mapPriceChange(m: RawPriceChange, recvTs: number, s: ClobStats, out: Observation[]): void {
  const sourceTs = ms(m.timestamp);
  const list = Array.isArray(m.price_changes) ? m.price_changes : Array.isArray(m.changes) ? m.changes : null;
  if (!list) {
    s.malformed++;
    return;
  }
  // Group by token, keeping order; the legacy form names the token once at the top. Messages hold
  // one or two tokens, so a linear scan of a short array beats a Map (and a closure) on this hot path.
  const groups: PriceGroup[] = [];
  for (let i = 0; i < list.length; i++) {
    const c = list[i] as RawChange;
    const token = c?.asset_id ?? m.asset_id;
    const sd = side(c?.side);
    if (!c || !isId(token) || !sd || !isPrice(c.price) || !isSize(c.size)) {
      s.malformed++;
      return;
    }
    let g: PriceGroup | undefined;
    for (let k = 0; k < groups.length; k++) if (groups[k].token === token) g = groups[k];
    if (!g) groups.push((g = { token, changes: [], best_bid: undefined, best_ask: undefined }));
    g.changes.push({ side: sd, price: c.price, size: c.size });
    // best_bid/best_ask are optional; "" or absent means "not given".
    if (c.best_bid !== undefined) g.best_bid = isPrice(c.best_bid) ? c.best_bid : undefined;
    if (c.best_ask !== undefined) g.best_ask = isPrice(c.best_ask) ? c.best_ask : undefined;
  }
  if (groups.length === 0) {
    s.ignored++;
    return;
  }
  s.ok++;
  for (const g of groups) {
    const d: { -readonly [K in keyof BookDelta]: BookDelta[K] } = {
      type: 'book_delta',
      recv_ts: recvTs,
      source_ts: sourceTs,
      origin: 'ws',
      token_id: g.token,
      changes: g.changes,
    };
    if (g.best_bid !== undefined) d.best_bid = g.best_bid;
    if (g.best_ask !== undefined) d.best_ask = g.best_ask;
    out.push(d);
  }
}

function mapTrade(m: RawTrade, recvTs: number, s: ClobStats): Trade[] {
  if (!isId(m.asset_id) || !isPrice(m.price) || (m.size !== undefined && !isSize(m.size))) {
    s.malformed++;
    return [];
  }
  s.ok++;
  const sd = m.side === 'BUY' ? 'buy' : m.side === 'SELL' ? 'sell' : undefined;
  return [
    {
      type: 'trade',
      recv_ts: recvTs,
      source_ts: ms(m.timestamp),
      origin: 'ws',
      token_id: m.asset_id,
      price: m.price,
      ...(typeof m.size === 'string' ? { size: m.size } : {}),
      ...(sd ? { side: sd } : {}),
      ...(typeof m.fee_rate_bps === 'string' ? { fee_rate_bps: m.fee_rate_bps } : {}),
      ...(typeof m.transaction_hash === 'string' ? { tx_hash: m.transaction_hash } : {}),
    },
  ];
}

function mapTick(m: RawTick, recvTs: number, s: ClobStats): TickSizeChange[] {
  if (!isId(m.asset_id) || !isPrice(m.old_tick_size) || !isPrice(m.new_tick_size)) {
    s.malformed++;
    return [];
  }
  s.ok++;
  return [
    {
      type: 'tick_size',
      recv_ts: recvTs,
      source_ts: ms(m.timestamp),
      origin: 'ws',
      token_id: m.asset_id,
      old_tick_size: m.old_tick_size,
      new_tick_size: m.new_tick_size,
    },
  ];
}

function mapEvent(ev: unknown, recvTs: number, s: ClobStats, out: Observation[]): void {
  if (typeof ev !== 'object' || ev === null || Array.isArray(ev)) {
    s.malformed++;
    return;
  }
  const type = (ev as { event_type?: unknown }).event_type;
  switch (type) {
    case 'book':
      out.push(...mapBook(ev as RawBook, recvTs, s));
      return;
    case 'price_change':
      mapPriceChange(ev as RawPriceChange, recvTs, s, out);
      return;
    case 'last_trade_price':
      out.push(...mapTrade(ev as RawTrade, recvTs, s));
      return;
    case 'tick_size_change':
      out.push(...mapTick(ev as RawTick, recvTs, s));
      return;
    default:
      if (typeof type === 'string' && IGNORED_TYPES.has(type)) s.ignored++;
      else if (typeof type === 'string') s.unknown++;
      // Objects without event_type are subscription acks/errors: nothing to store.
      else s.ignored++;
  }
}

/** One parsed frame (an event object or an array of them) → observations. */
export function normalizeClob(raw: unknown, recvTs: number, stats: ClobStats = newStats()): Observation[] {
  const out: Observation[] = [];
  if (Array.isArray(raw)) for (const ev of raw) mapEvent(ev, recvTs, stats, out);
  else mapEvent(raw, recvTs, stats, out);
  return out;
}

/**
 * One text frame → observations. `PONG` and empty frames map to nothing; unparseable JSON counts as
 * malformed (and returns null so the feed can treat it as possible data loss).
 */
export function normalizeClobText(text: string, recvTs: number, stats: ClobStats = newStats()): Observation[] | null {
  const t = text.trim();
  if (t === '' || t === 'PONG' || t === 'PING') {
    stats.ignored++;
    return [];
  }
  let raw: unknown;
  try {
    raw = JSON.parse(t);
  } catch {
    stats.malformed++;
    return null;
  }
  return normalizeClob(raw, recvTs, stats);
}

/** Best-effort market/token ids named in a damaged frame (to limit a resnapshot to them). */
export function idsInDamagedFrame(text: string): { markets: string[]; tokens: string[] } {
  const markets = [...text.matchAll(/"market"\s*:\s*"(0x[0-9a-fA-F]{4,})"/g)].map((m) => m[1]);
  const tokens = [...text.matchAll(/"asset_id"\s*:\s*"([0-9A-Za-z]{2,})"/g)].map((m) => m[1]);
  return { markets: [...new Set(markets)], tokens: [...new Set(tokens)] };
}
