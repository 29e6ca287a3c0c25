// `pmtape import --kind wallet`: captured wallet frames and REST bodies through the same normalizer.
// WS book pushes and REST book bodies need the market's outcome tokens, so topic/market listings
// (or `{topic, market}` lines) must come first or already be recorded; older versions are dropped.

import { openReader } from '../../storage/index.js';
import type { Outcome } from '../../schema/market.js';
import type { BookSnapshot } from '../../schema/observation.js';
import { recordedMarkets, type ImportSession, type ImportTarget, type Importer } from '../importer.js';
import { catalogChange } from '../catalog-diff.js';
import { BOOK, ENVELOPE, MARKET, METRIC, TOPIC, WS } from './fields.js';
import { walletKey } from './feed.js';
import {
  WALLET_CATALOG,
  normalizeBookData,
  normalizeFrame,
  normalizeMetrics,
  normalizeWalletMarket,
  frameMarketId,
  topicMarketId,
  bookMarketId,
} from './normalize.js';
import { VersionGate } from './order.js';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

export const walletImporter: Importer = {
  kind: 'wallet',
  async open(dataDir): Promise<ImportSession> {
    const state = await recordedMarkets(dataDir, 'wallet-prediction');
    const topics = new Map<string, unknown>(); // market id → topic
    const rawMarkets = new Map<string, unknown>(); // market id → underlying market
    const gate = new VersionGate();
    const seeded = new Set<string>();
    const outcomesOf = (id: string): readonly Outcome[] | undefined => state.get(id)?.outcomes;

    const join = (ids: Iterable<string>, recvTs: number): ImportTarget[] => {
      const out: ImportTarget[] = [];
      for (const id of ids) {
        if (!topics.has(id) || !rawMarkets.has(id)) continue;
        const m = normalizeWalletMarket(topics.get(id), rawMarkets.get(id));
        if (!m) continue;
        const ev = catalogChange(WALLET_CATALOG, state.get(id) ?? null, m, recvTs);
        state.set(id, m);
        if (ev) out.push({ key: walletKey(id, 'catalog'), obs: ev });
      }
      return out;
    };

    const book = async (id: string, obs: ReturnType<typeof normalizeBookData>): Promise<{ out: ImportTarget[]; skip?: string }> => {
      if (obs.length === 0)
        return { out: [], skip: outcomesOf(id) ? 'malformed book' : 'book of no known market (import or record its catalogue first)' };
      if (!seeded.has(id)) {
        seeded.add(id);
        const last = await openReader(dataDir, walletKey(id, 'books'))
          .latest()
          .catch(() => null);
        if (last?.rec.type === 'book') gate.seed(id, { version: last.rec.version ?? null, ts: last.rec.source_ts });
      }
      const b = obs[0];
      if (!gate.accept(id, { version: b.version ?? null, ts: b.source_ts })) return { out: [], skip: 'older or repeated book version' };
      return { out: [{ key: walletKey(id, 'books'), obs: b, checkpoint: true }] };
    };

    return {
      async map(c, recvTs) {
        const msg = c.msg;
        if (isObj(msg) && (msg[WS.type] === WS.reply || msg[WS.type] === WS.push)) {
          const obs = normalizeFrame(msg, recvTs, outcomesOf);
          const id = frameMarketId(msg);
          if (id === null) return { out: [], skip: msg[WS.type] === WS.reply ? 'reply' : 'heartbeat or unknown topic' };
          return book(
            id,
            obs.filter((o): o is BookSnapshot => o.type === 'book'),
          );
        }
        if (isObj(msg) && isObj(msg.topic) && isObj(msg.market)) {
          const id = topicMarketId(msg.topic);
          if (id === null) return { out: [], skip: 'topic without a market id' };
          topics.set(id, msg.topic);
          rawMarkets.set(id, msg.market);
          const out = join([id], recvTs);
          return out.length ? { out } : { out, skip: 'no change against the recorded catalogue' };
        }
        const data = isObj(msg) ? msg[ENVELOPE.data] : undefined;
        if (Array.isArray(data)) {
          const ids: string[] = [];
          for (const item of data) {
            if (!isObj(item)) continue;
            if (TOPIC.id in item) {
              const id = topicMarketId(item);
              if (id !== null) {
                topics.set(id, item);
                ids.push(id);
              }
            } else if (MARKET.conditionId in item && (typeof item[MARKET.id] === 'number' || typeof item[MARKET.id] === 'string')) {
              const id = String(item[MARKET.id]);
              rawMarkets.set(id, item);
              ids.push(id);
            }
          }
          const out = join(ids, recvTs);
          return out.length ? { out } : { out, skip: 'listing page without a complete topic + market pair or change' };
        }
        if (isObj(data) && (BOOK.asks in data || BOOK.bids in data)) {
          const id = bookMarketId(data);
          if (id === null) return { out: [], skip: 'book without a market id' };
          return book(id, normalizeBookData(data, recvTs, outcomesOf));
        }
        if (isObj(data) && METRIC.outcomes in data && METRIC.timestampMs in data) {
          const samples = normalizeMetrics(msg, recvTs, outcomesOf);
          const id = String(data[METRIC.marketId]);
          return samples.length
            ? { out: samples.map((s) => ({ key: walletKey(id, 'metrics'), obs: s })) }
            : { out: [], skip: 'malformed stats' };
        }
        if (isObj(data) && MARKET.conditionId in data) {
          const id = String(data[MARKET.id]);
          rawMarkets.set(id, data);
          const out = join([id], recvTs);
          return out.length ? { out } : { out, skip: 'market without its topic, or no change' };
        }
        return { out: [], skip: 'not a wallet frame or REST body' };
      },
    };
  },
};
