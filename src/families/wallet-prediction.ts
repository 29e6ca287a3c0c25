// The wallet-prediction family (API.md §3, paid plan): the wallet venue's short-dated up/down topics
// over its own CTF-style venue. The stored book is priced in the first outcome; `outcome=<label>`
// serves the mirrored view. Mounted under `/v3/wallet-prediction` and its alias `/v3/partner-venue`.

import type { Market, WalletMarket } from '../schema/market.js';
import { walletKind } from '../recorders/wallet/feed.js';
import { walletImporter } from '../recorders/wallet/import.js';
import { walletSource } from '../recorders/backfill-sources.js';
import type { BookModel } from '../api/query/book-pages.js';
import { walletMarketRecord, walletSnapshot } from '../api/query/shapes.js';
import { paramShapes, walletMarketSchema, walletSnapshotSchema } from '../api/json-schemas.js';
import { overlaps } from '../api/routes/helpers.js';
import type { BookView, FamilyDescriptor } from './descriptor.js';

/** Snapshots of the first outcome's stored book; other outcomes are mirrored when shaped. */
export function walletModel(market: WalletMarket, opts: BookView = {}): BookModel {
  const first = market.outcomes[0]?.token_id;
  return {
    replay: true,
    candidate: (rec) => (rec.type === 'book' || rec.type === 'book_delta') && rec.token_id === first,
    produces: (_rec, changed) => changed.includes(first),
    shape: (rec, books) => walletSnapshot(market, rec, books, opts),
  };
}

const wallet = (m: Market): WalletMarket => m as WalletMarket;
const LIST_URL = '/v3/wallet-prediction/markets';

export const walletFamily: FamilyDescriptor = {
  family: 'wallet-prediction',
  plan: 'paid',
  kinds: [walletKind],
  importers: [walletImporter],
  backfill: walletSource,
  aliases: (m) => [wallet(m).condition_id, wallet(m).slug, wallet(m).topic_id],
  booksWithoutCatalog: false,
  idField: 'market_id',
  marketRecord: (m) => walletMarketRecord(wallet(m)),
  keep: (m, f) => {
    const w = wallet(m);
    return (f.coin === undefined || w.coin === f.coin) && (f.window === undefined || w.window === f.window) &&
      (f.status === undefined || w.status === f.status) && overlaps(w.start_time, w.end_time, f.start, f.end);
  },
  bookModel: (_id, market, view) => (market?.family === 'wallet-prediction' ? walletModel(market, view) : null),
  routes: {
    name: 'wallet',
    prefixes: ['/v3/wallet-prediction', '/v3/partner-venue'],
    marketsPath: '/markets',
    marketPath: '/:market_id',
    idParam: 'market_id',
    // The alias answers identically, 404 pointers included.
    listUrl: () => LIST_URL,
    noun: 'market',
    unknownMessage: (pathId, listUrl) => `Unknown market '${pathId.slice(0, 200)}'; list known markets at ${listUrl}.`,
    marketFilters: { coin: paramShapes.coin, window: paramShapes.window, status: paramShapes.status },
    depth: paramShapes.depth,
    outcomes: true,
    includeOrderbook: { snapshots: true, latest: null },
    describe: {
      markets: 'Wallet-prediction markets (topics joined to their underlying market), every identifier kept after expiry.',
      snapshots: 'One snapshot per recorded observation (a delta yields the full book after it).',
      latest: 'The newest recorded book (stale: true when the recorder is not connected), or the book as of `as_of`.',
    },
    schemas: { market: walletMarketSchema, snapshot: walletSnapshotSchema },
    // Loaded when the routes are mounted: recorders and commands that look the family up never load it.
    extra: async () => (await import('../api/routes/wallet-prediction.js')).default,
  },
};
