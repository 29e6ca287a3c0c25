// `pmtape import --kind clob`: captured market-WebSocket messages through the clob normalizer. A
// message names tokens, not markets, so the recorded coin catalogue maps each token to its market:
// import or record the catalogue first.

import type { ImportTarget, Importer } from '../importer.js';
import { recordedMarkets } from '../importer.js';
import { normalizeClob, newStats } from './normalize.js';
import { booksKey } from './feed.js';

export const clobImporter: Importer = {
  kind: 'clob',
  async open(dataDir) {
    const byToken = new Map<string, string>();
    for (const m of (await recordedMarkets(dataDir, 'coin')).values()) for (const o of m.outcomes) byToken.set(o.token_id, m.market_id);
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
