// The coin-scoped family (API.md §5, free plan): the CTF-style `clob` venue's books, described by its
// `catalog` REST. Markets live under `/v3/{coin}`; a path id may be the market id, condition id or
// slug; snapshots may be sampled on an interval grid.

import { notFound } from '../../errors.js';
import type { CoinMarket, Market } from '../../schema/market.js';
import type { BookModel, BookShapeOptions } from '../../book/book-model.js';
import { INTERVAL_MS } from '../../book/interval-grid.js';
import { ReplayBook, type LevelsText, type ReplayMarket } from '../../book/replay-book.js';
import type { Recorded } from '../../schema/observation.js';
import { overlaps } from '../../schema/time.js';
import { paramShapes } from '../json-parts.js';
import type { FamilyDescriptor } from '../descriptor.js';
import { intervalPage } from './intervals.js';
import { coinMarketRecord, coinSnapshot } from './shapes.js';
import { coinMarketSchema, coinSnapshotSchema, coinSnapshotsPageSchema } from './response-schemas.js';

/** Every book-changing record of the market's outcome tokens is a snapshot of all its books. */
export function coinModel(market: CoinMarket, opts: BookShapeOptions = {}): BookModel {
  const tokens = new Set(market.outcomes.map((o) => o.token_id));
  return {
    replay: true,
    candidate: (rec) => (rec.type === 'book' || rec.type === 'book_delta') && tokens.has(rec.token_id),
    produces: (_rec, changed) => changed.length > 0,
    shape: (rec, books) => coinSnapshot(market, rec, books, opts),
  };
}

/** A coin market in a replay: valid while every outcome's book is; a snapshot holds them all. */
export class CoinReplayBook extends ReplayBook {
  private readonly market: CoinMarket;
  private readonly tokens: readonly string[];

  constructor(m: ReplayMarket) {
    super(m);
    this.market = m.market as CoinMarket;
    this.tokens = [...this.outcomes.keys()];
    this.idJson = JSON.stringify(m.id);
  }

  valid(): boolean {
    return this.tokens.length > 0 && this.tokens.every((t) => this.books.isValid(t));
  }

  snapshot(rec: Recorded, changed: readonly string[], depth: number | undefined): Record<string, unknown> | null {
    if ((rec.type !== 'book' && rec.type !== 'book_delta') || !this.outcomes.has(rec.token_id) || changed.length === 0) return null;
    return coinSnapshot(this.market, rec, this.books, { depth, includeOrderbook: true });
  }

  /** `{"outcome":...,"token_id":...,"bids":...,"asks":...}` per token, kept while its levels are the same. */
  private readonly bookTexts = new Map<string, { levels: LevelsText; text: string }>();
  private readonly idJson: string;

  /** The same text as `snapshot`; each outcome's part is built once per change of its book. */
  override snapshotText(rec: Recorded, changed: readonly string[], depth: number | undefined): string | null {
    if ((rec.type !== 'book' && rec.type !== 'book_delta') || !this.outcomes.has(rec.token_id) || changed.length === 0) return null;
    let books = '';
    for (const [token, label] of this.outcomes) {
      const levels = this.levelsText(token, depth);
      if (levels === null) continue;
      let part = this.bookTexts.get(token);
      if (part?.levels !== levels)
        this.bookTexts.set(
          token,
          (part = { levels, text: `{"outcome":${JSON.stringify(label)},"token_id":${JSON.stringify(token)},${levels.text}}` }),
        );
      books += books === '' ? part.text : `,${part.text}`;
    }
    return books === '' ? null : `{"market_id":${this.idJson},${this.timesText(rec)},"books":[${books}]}`;
  }

  sample(depth: number): Record<string, unknown> | null {
    if (!this.valid() || !this.lastBook) return null;
    return coinSnapshot(this.market, this.lastBook, this.books, { depth, includeOrderbook: true });
  }
}

const coin = (m: Market): CoinMarket => m as CoinMarket;

export const coinFamily: FamilyDescriptor = {
  family: 'coin',
  plan: 'free',
  tardisExchange: 'pmtape-clob',
  kinds: ['catalog', 'clob'],
  catalogue: 'catalog',
  aliases: (m) => [coin(m).condition_id, coin(m).slug],
  booksWithoutCatalog: false,
  idField: 'market_id',
  marketRecord: (m) => coinMarketRecord(coin(m)),
  keep: (m, f) => {
    const c = coin(m);
    return (
      (f.coin === undefined || c.coin === f.coin) &&
      (f.status === undefined || c.status === f.status) &&
      (f.window === undefined || c.window === f.window) &&
      overlaps(c.start_time, c.end_time, f.start, f.end)
    );
  },
  bookModel: (_id, market, view) => (market?.family === 'coin' ? coinModel(market, view) : null),
  replay: { idParam: 'market_id', byCoin: true, metrics: false, maxDepth: 1000, book: (m) => new CoinReplayBook(m) },
  sampling: { intervals: INTERVAL_MS, page: (reader, market, req, view) => intervalPage(reader, coin(market), req, view) },
  routes: {
    name: 'coin',
    prefixes: ['/v3'],
    marketsPath: '/:coin/markets',
    marketPath: '/:coin/markets/:market_id',
    idParam: 'market_id',
    scope: {
      param: 'coin',
      async check(app, value) {
        if (app.pmtape.config.coins.includes(value)) return;
        const known = (await app.pmtape.markets.list('coin')).some((e) => coin(e.market).coin === value);
        if (!known) throw notFound(`Unknown coin '${value.slice(0, 50)}'; recorded coins: ${app.pmtape.config.coins.join(', ')}.`);
      },
      mismatch: (m, value, pathId) =>
        coin(m).coin === value
          ? null
          : `Market '${pathId.slice(0, 200)}' is not a ${value.slice(0, 50)} market; see /v3/${coin(m).coin}/markets.`,
    },
    listUrl: (c) => `/v3/${c}/markets`,
    noun: 'market',
    unknownMessage: (pathId, listUrl) => `Unknown market '${pathId.slice(0, 200)}'; list known markets at ${listUrl}.`,
    marketFilters: { status: paramShapes.status, window: paramShapes.window },
    depth: paramShapes.depth,
    outcomes: false,
    includeOrderbook: { snapshots: false, latest: true },
    describe: {
      markets: 'Up/down markets of one coin from the catalogue, with the native upstream object.',
      snapshots: 'Book snapshots of one market: every observation (interval=raw) or one per bucket; uncovered buckets are listed in gaps.',
      latest: 'The newest recorded books of a market (stale: true when not recorded live), or as of `as_of`.',
    },
    schemas: {
      market: coinMarketSchema,
      snapshot: coinSnapshotSchema,
      snapshotsPage: coinSnapshotsPageSchema,
    },
  },
};
