// The wallet-prediction family (API.md §3, paid plan): the wallet venue's short-dated up/down topics
// over its own CTF-style venue. The stored book is priced in the first outcome; `outcome=<label>`
// serves the mirrored view. Mounted under `/v3/wallet-prediction` and its alias `/v3/partner-venue`.

import type { Market, WalletMarket } from '../../schema/market.js';
import type { BookModel } from '../../book/book-model.js';
import { ReplayBook, type ReplayMarket } from '../../book/replay-book.js';
import type { Recorded } from '../../schema/observation.js';
import { overlaps } from '../../schema/time.js';
import { paramShapes } from '../json-parts.js';
import type { BookView, FamilyDescriptor } from '../descriptor.js';
import { walletMarketRecord, walletSnapshot } from './shapes.js';
import { walletMarketSchema, walletSnapshotSchema } from './response-schemas.js';

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

/** A wallet market in a replay: the first outcome's stored book is the market's (others mirror it). */
export class WalletReplayBook extends ReplayBook {
  private readonly market: WalletMarket;
  private readonly first: string | undefined;

  constructor(m: ReplayMarket) {
    super(m);
    this.market = m.market as WalletMarket;
    this.first = this.market.outcomes[0]?.token_id;
  }

  valid(): boolean {
    return this.first !== undefined && this.books.isValid(this.first);
  }

  private produces(rec: Recorded, changed: readonly string[]): boolean {
    return (rec.type === 'book' || rec.type === 'book_delta') && rec.token_id === this.first && changed.includes(this.first);
  }

  snapshot(rec: Recorded, changed: readonly string[], depth: number | undefined): Record<string, unknown> | null {
    return this.produces(rec, changed) ? walletSnapshot(this.market, rec, this.books, { depth }) : null;
  }

  /** The same text as `snapshot`, the levels serialized once per change of the book. */
  override snapshotText(rec: Recorded, changed: readonly string[], depth: number | undefined): string | null {
    if (!this.produces(rec, changed)) return null;
    const t = this.levelsText(this.first!, depth);
    if (t === null) return null;
    const label = this.market.outcomes[0].label;
    return `{"market_id":${JSON.stringify(this.m.id)},"outcome":${JSON.stringify(label)},"token_id":${JSON.stringify(this.first)},${this.timesText(rec)},${t.text}}`;
  }

  sample(depth: number): Record<string, unknown> | null {
    if (!this.valid() || !this.lastBook) return null;
    return walletSnapshot(this.market, this.lastBook, this.books, { depth });
  }
}

const wallet = (m: Market): WalletMarket => m as WalletMarket;
const LIST_URL = '/v3/wallet-prediction/markets';

export const walletFamily: FamilyDescriptor = {
  family: 'wallet-prediction',
  plan: 'paid',
  tardisExchange: 'pmtape-wallet',
  kinds: ['wallet'],
  catalogue: 'wallet',
  aliases: (m) => [wallet(m).condition_id, wallet(m).slug, wallet(m).topic_id],
  booksWithoutCatalog: false,
  idField: 'market_id',
  marketRecord: (m) => walletMarketRecord(wallet(m)),
  keep: (m, f) => {
    const w = wallet(m);
    return (
      (f.coin === undefined || w.coin === f.coin) &&
      (f.window === undefined || w.window === f.window) &&
      (f.status === undefined || w.status === f.status) &&
      overlaps(w.start_time, w.end_time, f.start, f.end)
    );
  },
  bookModel: (_id, market, view) => (market?.family === 'wallet-prediction' ? walletModel(market, view) : null),
  replay: { idParam: 'market_id', byCoin: true, metrics: true, maxDepth: 1000, book: (m) => new WalletReplayBook(m) },
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
    series: { metrics: ['chance', 'price', 'last_trade'] },
  },
};
