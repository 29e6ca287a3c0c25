// `pmtape import --kind yesno`: captured yes/no REST bodies through the same normalizer. An order
// book body does not name its market, so its capture line carries `"ticker"` beside `msg`; market
// bodies and `/markets` pages become catalogue events against what is already recorded.

import { recordedMarkets, type ImportSession, type ImportTarget, type Importer } from '../importer.js';
import { catalogChange } from '../catalog-diff.js';
import { yesnoBooksKey, yesnoCatalogKey } from './feed.js';
import { YESNO_CATALOG, classify, eventSeries, marketsPage, normalizeMarket, normalizeOrderbook } from './normalize.js';

export const yesnoImporter: Importer = {
  kind: 'yesno',
  async open(dataDir): Promise<ImportSession> {
    const state = await recordedMarkets(dataDir, 'yesno-exchange');
    const seriesOfEvent = new Map<string, string>();
    for (const m of state.values()) seriesOfEvent.set(m.event_ticker, m.series_ticker);
    const catalog = (raws: unknown[], recvTs: number): { out: ImportTarget[]; skip?: string } => {
      const out: ImportTarget[] = [];
      let bad = 0;
      for (const raw of raws) {
        const m = normalizeMarket(
          raw,
          (e) => seriesOfEvent.get(e),
          () => bad++,
        );
        if (!m) continue;
        const ev = catalogChange(YESNO_CATALOG, state.get(m.ticker) ?? null, m, recvTs);
        state.set(m.ticker, m);
        if (ev) out.push({ key: yesnoCatalogKey(m.ticker), obs: ev });
      }
      if (out.length > 0) return { out };
      return { out, skip: bad > 0 ? 'malformed market' : 'no change against the recorded catalogue' };
    };
    return {
      async map(c, recvTs) {
        const msg = c.msg;
        switch (classify(msg)) {
          case 'orderbook': {
            const ticker = c.extra?.ticker;
            if (typeof ticker !== 'string' || ticker === '') return { out: [], skip: 'order book line without "ticker" beside "msg"' };
            let why = '';
            const obs = normalizeOrderbook(msg, recvTs, undefined, (w) => (why = w));
            if (obs.length === 0) return { out: [], skip: `malformed order book (${why})` };
            return { out: [{ key: yesnoBooksKey(ticker), obs: obs[0], checkpoint: true }] };
          }
          case 'market':
            return catalog([(msg as { market: unknown }).market], recvTs);
          case 'markets':
            return catalog(marketsPage(msg)?.markets ?? [], recvTs);
          case 'events': {
            const pairs = eventSeries(msg);
            for (const [e, s] of pairs) seriesOfEvent.set(e, s);
            // nested markets (`with_nested_markets=true` or `/events/{t}`) are catalogue too
            const o = msg as { events?: Array<{ markets?: unknown[] }>; markets?: unknown[] };
            const nested = [...(o.markets ?? []), ...(o.events ?? []).flatMap((e) => (Array.isArray(e?.markets) ? e.markets : []))];
            if (nested.length > 0) return catalog(nested, recvTs);
            return { out: [], skip: 'event listing (its series mapping is used for later markets)' };
          }
          default:
            return { out: [], skip: 'not a yes/no order book, market or event body' };
        }
      },
    };
  },
};
