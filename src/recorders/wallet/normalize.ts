// Follows ../shared/venues/wallet.md (wallet venue topics + underlying venue books/markets; partly
// unverified, so every wire name comes from ./fields.ts). Pure mapping of raw frames and REST bodies
// to normalized records; heartbeats and replies map to nothing; bad input is reported and skipped.

import type { Ladder, Level, MetricSample, BookSnapshot, Observation } from '../../schema/observation.js';
import type { CatalogRules } from '../catalog-diff.js';
import type { MarketStatus, Outcome, Resolution, WalletMarket } from '../../schema/market.js';
import { doubleText } from '../../schema/number-text.js';
import { BOOK, ENVELOPE, MARKET, METRIC, OUTCOME, RESOLUTION, RESOLUTION_WORDS, STATUS_WORDS, TOPIC, WS } from './fields.js';

export type OnBad = (why: string) => void;
const ignore: OnBad = () => undefined;

/** What the normalizer needs to know about a market: its outcomes, first (the book's) first. */
export type OutcomesOf = (marketId: string) => readonly Outcome[] | undefined;

type Obj = Record<string, unknown>;
function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
function idText(v: unknown): string | null {
  if (typeof v === 'string' && v.length > 0) return v;
  if (typeof v === 'number' && Number.isSafeInteger(v)) return String(v);
  return null;
}
function finite(v: unknown): number | null {
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  if (typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v))) return Number(v);
  return null;
}
/** Epoch ms from a number (ms, or seconds when small) or ISO text. */
function timeMs(v: unknown): number | null {
  if (typeof v === 'number' && Number.isFinite(v)) return v < 1e11 ? v * 1000 : v;
  if (typeof v === 'string' && v !== '') {
    if (/^\d+$/.test(v)) return timeMs(Number(v));
    const ms = Date.parse(v);
    return Number.isFinite(ms) ? ms : null;
  }
  return null;
}

// ---- order books --------------------------------------------------------------------------------

/**
 * A level's price or size as stored text: a JSON number (how this venue sends them) is a double and
 * gets its canonical 15-digit text (schema/number-text.ts: `64.50999999999999` → `64.51`); text the
 * venue sent as text is kept byte for byte.
 */
const levelText = (raw: unknown, value: number): string => (typeof raw === 'string' ? raw : doubleText(value));

/** A numeric ladder → text levels, validating prices in [0, 1] and sizes ≥ 0; null when malformed. */
function ladder(raw: unknown): Ladder | null {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) return null;
  const out: Level[] = [];
  for (const lv of raw as unknown[]) {
    if (!Array.isArray(lv) || lv.length < 2) return null;
    const p = finite(lv[0]);
    const s = finite(lv[1]);
    if (p === null || s === null || p < 0 || p > 1 || s < 0) return null;
    out.push([levelText(lv[0], p), levelText(lv[1], s)]);
  }
  return out;
}

/** Market id named by a book snapshot object, or null. */
export function bookMarketId(data: unknown): string | null {
  return isObj(data) ? idText(data[BOOK.marketId]) : null;
}

/**
 * A full-snapshot book object (the WS push's `data`, or the REST `data`) → one `book` record priced
 * in the first outcome. `version` and `updateTimestampMs` are kept for ordering.
 */
export function normalizeBookData(data: unknown, recvTs: number, outcomesOf: OutcomesOf, onBad: OnBad = ignore): BookSnapshot[] {
  const marketId = bookMarketId(data);
  if (!isObj(data) || marketId === null) {
    onBad('book snapshot lacks a market id');
    return [];
  }
  const outcomes = outcomesOf(marketId);
  if (!outcomes || outcomes.length === 0) {
    onBad(`book for market ${marketId} whose outcome tokens are not known`);
    return [];
  }
  const bids = ladder(data[BOOK.bids]);
  const asks = ladder(data[BOOK.asks]);
  if (bids === null || asks === null) {
    onBad(`book for market ${marketId} has a malformed ladder`);
    return [];
  }
  const version = finite(data[BOOK.version]);
  return [
    {
      type: 'book',
      recv_ts: recvTs,
      source_ts: timeMs(data[BOOK.updateTimestampMs]),
      token_id: outcomes[0].token_id,
      units: 'decimal',
      bids,
      asks,
      ...(version !== null ? { version } : {}),
    },
  ];
}

/** REST `GET /v1/markets/{id}/orderbook` body → book record. */
export function normalizeRestBook(body: unknown, recvTs: number, outcomesOf: OutcomesOf, onBad: OnBad = ignore): BookSnapshot[] {
  if (!isObj(body) || body[ENVELOPE.success] === false || !isObj(body[ENVELOPE.data])) {
    onBad('order book reply is not a successful envelope');
    return [];
  }
  return normalizeBookData(body[ENVELOPE.data], recvTs, outcomesOf, onBad);
}

export type FrameKind = 'reply' | 'heartbeat' | 'book' | 'unknown';

/** Classifies one parsed WS frame; the heartbeat's payload is echoed by the feed. */
export function frameKind(frame: unknown): FrameKind {
  if (!isObj(frame)) return 'unknown';
  if (frame[WS.type] === WS.reply) return 'reply';
  if (frame[WS.type] !== WS.push || typeof frame[WS.topic] !== 'string') return 'unknown';
  const topic = frame[WS.topic] as string;
  if (topic === WS.heartbeatTopic) return 'heartbeat';
  if (topic.startsWith(WS.bookTopicPrefix)) return 'book';
  return 'unknown';
}

/** Market id of a book push, from its topic (`predictOrderbook/<id>`) or its data. */
export function frameMarketId(frame: unknown): string | null {
  if (!isObj(frame) || typeof frame[WS.topic] !== 'string') return null;
  const topic = frame[WS.topic] as string;
  if (!topic.startsWith(WS.bookTopicPrefix)) return null;
  return topic.slice(WS.bookTopicPrefix.length) || bookMarketId(frame[WS.data]);
}

/** One WS frame → records: a book push gives one `book`; replies and heartbeats give nothing. */
export function normalizeFrame(frame: unknown, recvTs: number, outcomesOf: OutcomesOf, onBad: OnBad = ignore): Observation[] {
  switch (frameKind(frame)) {
    case 'reply':
    case 'heartbeat':
      return [];
    case 'book': {
      const data = (frame as Obj)[WS.data];
      const topicId = frameMarketId(frame);
      if (topicId !== null && bookMarketId(data) !== null && bookMarketId(data) !== topicId) {
        onBad(`book push on topic of market ${topicId} names market ${bookMarketId(data)}`);
        return [];
      }
      return normalizeBookData(data, recvTs, outcomesOf, onBad);
    }
    default:
      onBad('unknown frame');
      return [];
  }
}

// ---- metrics ------------------------------------------------------------------------------------

/**
 * Stats body → metric samples: per outcome, `chance`, `price` and `last_trade` as three separate
 * series (a missing value gives no sample; the last trade carries its own execution time).
 */
export function normalizeMetrics(body: unknown, recvTs: number, outcomesOf: OutcomesOf, onBad: OnBad = ignore): MetricSample[] {
  const data = isObj(body) && isObj(body[ENVELOPE.data]) ? (body[ENVELOPE.data] as Obj) : null;
  const marketId = data ? idText(data[METRIC.marketId]) : null;
  if (!data || marketId === null || !Array.isArray(data[METRIC.outcomes])) {
    onBad('stats reply lacks data.marketId or data.outcomes');
    return [];
  }
  const known = outcomesOf(marketId) ?? [];
  const sourceTs = timeMs(data[METRIC.timestampMs]);
  const out: MetricSample[] = [];
  for (const o of data[METRIC.outcomes] as unknown[]) {
    if (!isObj(o)) continue;
    const idx = finite(o[METRIC.indexSet]);
    const label = typeof o[METRIC.label] === 'string' ? (o[METRIC.label] as string) : idx !== null ? known[idx - 1]?.label : undefined;
    if (!label) {
      onBad(`stats outcome without a label in market ${marketId}`);
      continue;
    }
    const token = known.find((k) => k.label === label)?.token_id;
    const base = { recv_ts: recvTs, outcome: label, ...(token ? { token_id: token } : {}) };
    const chance = finite(o[METRIC.chance]);
    const price = finite(o[METRIC.price]);
    const last = finite(o[METRIC.lastTradePrice]);
    if (chance !== null) out.push({ type: 'metric', metric: 'chance', source_ts: sourceTs, value: chance, ...base });
    if (price !== null) out.push({ type: 'metric', metric: 'price', source_ts: sourceTs, value: price, ...base });
    if (last !== null)
      out.push({
        type: 'metric',
        metric: 'last_trade',
        source_ts: timeMs(o[METRIC.lastTradeTimestampMs]) ?? sourceTs,
        value: last,
        ...base,
      });
  }
  return out;
}

// ---- catalogue ----------------------------------------------------------------------------------

function statusOf(v: unknown): MarketStatus | null {
  return typeof v === 'string' ? (STATUS_WORDS[v.toUpperCase()] ?? null) : null;
}

/** Coin and window from the topic, else from a slug like `btc-updown-15m-1785067200`. */
function coinWindow(topic: Obj): { coin: string; window: string | null } {
  const slug = typeof topic[TOPIC.slug] === 'string' ? (topic[TOPIC.slug] as string) : '';
  const m = /^([a-z0-9]+)-updown-(\d+[mhd])-/i.exec(slug);
  const asset = typeof topic[TOPIC.asset] === 'string' ? (topic[TOPIC.asset] as string).toLowerCase() : m?.[1]?.toLowerCase();
  const interval = typeof topic[TOPIC.interval] === 'string' ? (topic[TOPIC.interval] as string) : (m?.[2] ?? null);
  return { coin: asset ?? '', window: interval };
}

/**
 * A wallet topic joined to its underlying market → `WalletMarket`, or null when an identifier is
 * missing. Status: the underlying market's word wins (it settles), the topic's is the fallback.
 * `native` keeps both raw objects.
 */
export function normalizeWalletMarket(topic: unknown, market: unknown, onBad: OnBad = ignore): WalletMarket | null {
  if (!isObj(topic) || !isObj(market)) {
    onBad('topic or market is not an object');
    return null;
  }
  const topicId = idText(topic[TOPIC.id]);
  const marketId = idText(market[MARKET.id]);
  const conditionId = idText(market[MARKET.conditionId]);
  const rawOutcomes = market[MARKET.outcomes];
  if (!topicId || !marketId || !conditionId || !Array.isArray(rawOutcomes)) {
    onBad(`topic ${topicId ?? '?'} / market ${marketId ?? '?'} lacks identifiers or outcomes`);
    return null;
  }
  const outcomes: { label: string; token_id: string; idx: number }[] = [];
  for (const o of rawOutcomes as unknown[]) {
    if (!isObj(o) || typeof o[OUTCOME.label] !== 'string' || idText(o[OUTCOME.tokenId]) === null) {
      onBad(`market ${marketId} has a malformed outcome`);
      return null;
    }
    outcomes.push({
      label: o[OUTCOME.label] as string,
      token_id: idText(o[OUTCOME.tokenId])!,
      idx: finite(o[OUTCOME.indexSet]) ?? outcomes.length + 1,
    });
  }
  outcomes.sort((a, b) => a.idx - b.idx); // indexSet 1 (the book's outcome) first
  const status = statusOf(market[MARKET.status]) ?? statusOf(topic[TOPIC.status]);
  if (status === null) {
    onBad(`market ${marketId} has an unknown status ${String(market[MARKET.status])}`);
    return null;
  }
  const res = isObj(market[MARKET.resolution]) ? (market[MARKET.resolution] as Obj) : null;
  const resolution: Resolution | null =
    res && typeof res[RESOLUTION.status] === 'string' ? (RESOLUTION_WORDS[(res[RESOLUTION.status] as string).toUpperCase()] ?? null) : null;
  const winIdx = res ? finite(res[RESOLUTION.winningIndexSet]) : null;
  const winning = resolution === 'resolved' && winIdx !== null ? (outcomes.find((o) => o.idx === winIdx)?.label ?? null) : null;
  const chainId = finite(market[MARKET.chainId]);
  const contract = idText(market[MARKET.exchangeContract]);
  const { coin, window } = coinWindow(topic);
  return {
    family: 'wallet-prediction',
    topic_id: topicId,
    market_id: marketId,
    condition_id: conditionId,
    slug: typeof topic[TOPIC.slug] === 'string' ? (topic[TOPIC.slug] as string) : null,
    outcomes: outcomes.map(({ label, token_id }) => ({ label, token_id })),
    coin,
    window,
    start_time: timeMs(topic[TOPIC.startTime]),
    end_time: timeMs(topic[TOPIC.endTime]),
    created_time: timeMs(market[MARKET.createdAt]) ?? timeMs(topic[TOPIC.createdAt]),
    updated_time: timeMs(market[MARKET.updatedAt]) ?? timeMs(topic[TOPIC.updatedAt]),
    status,
    resolution,
    winning_outcome: winning,
    resolved_time: res ? timeMs(res[RESOLUTION.resolvedAt]) : null,
    volume: finite(market[MARKET.volume]),
    liquidity: finite(market[MARKET.liquidity]),
    participants: finite(market[MARKET.participants]),
    chain: chainId !== null && contract !== null ? { chain_id: chainId, exchange_contract: contract } : null,
    start_price: finite(topic[TOPIC.startPrice]),
    end_price: finite(topic[TOPIC.endPrice]),
    native: { topic, market },
  };
}

/** Catalogue rules (`native` and `updated_time` alone are not events); settling is a resolution or winner. */
export const WALLET_CATALOG: CatalogRules<WalletMarket> = {
  tracked: [
    'topic_id',
    'condition_id',
    'slug',
    'outcomes',
    'start_time',
    'end_time',
    'status',
    'resolution',
    'winning_outcome',
    'resolved_time',
    'volume',
    'liquidity',
    'participants',
    'chain',
    'start_price',
    'end_price',
  ],
  resolves: (_prev, _next, changed) => changed.includes('resolution') || changed.includes('winning_outcome'),
  sourceTs: (m) => m.updated_time,
};

/** A listing page `{success, data: [...], cursor}` → items and next cursor ('' = last page). */
export function listPage(body: unknown, onBad: OnBad = ignore): { items: unknown[]; cursor: string } | null {
  if (!isObj(body) || body[ENVELOPE.success] === false || !Array.isArray(body[ENVELOPE.data])) {
    onBad('listing reply is not a successful envelope with a data array');
    return null;
  }
  const c = body[ENVELOPE.cursor];
  return { items: body[ENVELOPE.data] as unknown[], cursor: typeof c === 'string' ? c : '' };
}

/** The underlying market id a topic points at. */
export function topicMarketId(topic: unknown): string | null {
  return isObj(topic) ? idText(topic[TOPIC.marketId]) : null;
}
