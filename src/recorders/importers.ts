// Importers of raw captured upstream messages, by kind (`pmtape import --kind K`): each maps one
// captured message through the kind's own normalizer to keyed observations. The generic driver
// (import-run.ts) does time, de-duplication, ordering and appends.

import { listMarkets, openReader } from '../storage/index.js';
import type { LogKey } from '../storage/index.js';
import type { CoinMarket } from '../schema/market.js';
import type { Observation } from '../schema/observation.js';
import type { CapturedMessage } from './capture.js';
import { normalizeClob, newStats } from './clob/normalize.js';
import { booksKey } from './clob/feed.js';
import { catalogKey } from './catalog/feed.js';
import { catalogEvent, marketsIn, normalizeCatalogMarket } from './catalog/normalize.js';
import { yesnoImporter } from './yesno/import.js';
import { walletImporter } from './wallet/import.js';

export interface ImportTarget {
  readonly key: LogKey;
  readonly obs: Observation;
  /** Mark as a full-book checkpoint in the sparse index (every yes/no and wallet book is complete). */
  readonly checkpoint?: boolean;
}

export interface ImportSession {
  /** One captured message received at `recvTs` → keyed observations, or the reason for none. */
  map(m: CapturedMessage, recvTs: number): Promise<{ out: ImportTarget[]; skip?: string }>;
}

export interface Importer {
  readonly kind: string;
  /** Prepares a session over the data dir (e.g. loads identifier maps from recorded catalogues). */
  open(dataDir: string): Promise<ImportSession>;
}

/** Latest catalogue state of every recorded coin market, by market id. */
export async function recordedCoinMarkets(dataDir: string): Promise<Map<string, CoinMarket>> {
  const out = new Map<string, CoinMarket>();
  for (const id of await listMarkets(dataDir, 'coin', 'catalog')) {
    const last = await openReader(dataDir, catalogKey(id)).latest().catch(() => null);
    if (last?.rec.type === 'catalog' && last.rec.market.family === 'coin') out.set(id, last.rec.market);
  }
  return out;
}

export const clobImporter: Importer = {
  kind: 'clob',
  async open(dataDir) {
    const byToken = new Map<string, string>();
    for (const m of (await recordedCoinMarkets(dataDir)).values()) for (const o of m.outcomes) byToken.set(o.token_id, m.market_id);
    return {
      async map(m, recvTs) {
        const stats = newStats();
        const obs = normalizeClob(m.msg, recvTs, stats);
        const out: ImportTarget[] = [];
        let unknown = 0;
        for (const o of obs) {
          const token = 'token_id' in o ? o.token_id : undefined;
          const market = token ? byToken.get(token) : undefined;
          if (!market) {
            unknown++;
            continue;
          }
          out.push({ key: booksKey(market), obs: o });
        }
        if (out.length > 0) return { out };
        if (unknown > 0) return { out, skip: 'token of no recorded market (import or record the catalogue first)' };
        if (stats.malformed > 0) return { out, skip: 'malformed message' };
        if (stats.unknown > 0) return { out, skip: 'unknown event type' };
        return { out, skip: 'nothing to store (ack or heartbeat)' };
      },
    };
  },
};

export const catalogImporter: Importer = {
  kind: 'catalog',
  async open(dataDir) {
    const state = await recordedCoinMarkets(dataDir);
    return {
      async map(m, recvTs) {
        const out: ImportTarget[] = [];
        let unusable = 0;
        for (const raw of marketsIn(m.msg)) {
          const cm = normalizeCatalogMarket(raw, recvTs);
          if (!cm) {
            unusable++;
            continue;
          }
          const ev = catalogEvent(state.get(cm.market_id) ?? null, cm, recvTs, cm.updated_time);
          state.set(cm.market_id, cm);
          if (ev) out.push({ key: catalogKey(cm.market_id), obs: ev });
        }
        if (out.length > 0) return { out };
        return { out, skip: unusable > 0 ? 'not a two-outcome up/down market' : 'no change against the recorded catalogue' };
      },
    };
  },
};

/** Importers by kind. */
export const IMPORTERS: Record<string, Importer> = {
  clob: clobImporter,
  catalog: catalogImporter,
  yesno: yesnoImporter,
  wallet: walletImporter,
};
