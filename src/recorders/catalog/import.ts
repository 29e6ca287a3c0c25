// `pmtape import --kind catalog`: captured catalogue REST bodies (markets, events, pages) through the
// catalog normalizer; each market becomes a catalogue event against the recorded state, so an
// unchanged market writes nothing.

import type { ImportTarget, Importer } from '../importer.js';
import { recordedMarkets } from '../importer.js';
import { catalogChange } from '../catalog-diff.js';
import { catalogKey } from './feed.js';
import { COIN_CATALOG, marketsIn, normalizeCatalogMarket } from './normalize.js';

export const catalogImporter: Importer = {
  kind: 'catalog',
  async open(dataDir) {
    const state = await recordedMarkets(dataDir, 'coin');
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
          const ev = catalogChange(COIN_CATALOG, state.get(cm.market_id) ?? null, cm, recvTs);
          state.set(cm.market_id, cm);
          if (ev) out.push({ key: catalogKey(cm.market_id), obs: ev });
        }
        if (out.length > 0) return { out };
        return { out, skip: unusable > 0 ? 'not a two-outcome up/down market' : 'no change against the recorded catalogue' };
      },
    };
  },
};
