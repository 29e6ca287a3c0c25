// The yes/no exchange family (API.md §4, free plan): series → event → market tickers, public REST
// order books kept in the venue's native text and units. A ticker's books may be recorded before
// its catalogue entry, so snapshots need only the ticker.

import type { Market, YesNoMarket } from '../../schema/market.js';
import type { Recorded, YesNoBook } from '../../schema/observation.js';
import type { BookModel, BookShapeOptions } from '../../book/book-model.js';
import { ReplayBook, type Change } from '../../book/replay-book.js';
import { overlaps } from '../../schema/time.js';
import type { FamilyDescriptor } from '../descriptor.js';
import { YESNO_MAX_DEPTH, yesnoMarketRecord, yesnoSnapshot } from './shapes.js';
import { yesnoMarketSchema, yesnoSnapshotSchema } from './response-schemas.js';

/** Every stored yes/no book is complete: no replay, each one is a snapshot. */
export function yesnoModel(ticker: string, opts: BookShapeOptions = {}): BookModel {
  return {
    replay: false,
    candidate: (rec) => rec.type === 'yesno_book',
    produces: () => true,
    shape: (rec) => yesnoSnapshot(ticker, rec as Recorded<YesNoBook>, opts),
  };
}

/** A yes/no market in a replay: each poll is a whole book, valid until an open gap follows it. */
export class YesNoReplayBook extends ReplayBook {
  private book: Recorded<YesNoBook> | null = null;
  private gapAfter = false;

  valid(): boolean {
    return this.book !== null && !this.gapAfter;
  }

  protected override applyRecord(rec: Recorded): string[] {
    if (rec.type === 'yesno_book') {
      this.book = rec;
      this.gapAfter = false;
      return [''];
    }
    if (rec.type === 'gap' && rec.end_ts === null) this.gapAfter = true;
    return this.books.apply(rec);
  }

  snapshot(rec: Recorded, _changed: readonly string[], depth: number | undefined): Record<string, unknown> | null {
    return rec.type === 'yesno_book' ? yesnoSnapshot(this.m.id, rec, { depth, includeOrderbook: true }) : null;
  }

  sample(depth: number): Record<string, unknown> | null {
    if (!this.valid() || !this.lastBook) return null;
    return yesnoSnapshot(this.m.id, this.book!, { depth, includeOrderbook: true });
  }

  /** A whole yes/no book replaces the market's book: every level of both sides, in native text. */
  override changes(rec: Recorded, changed: readonly string[]): { is_snapshot: boolean; changes: Change[] } | null {
    if (rec.type !== 'yesno_book') return super.changes(rec, changed);
    const out: Change[] = [];
    this.levels(out, undefined, 'yes', rec.yes, false);
    this.levels(out, undefined, 'no', rec.no, false);
    return { is_snapshot: true, changes: out };
  }

  override state(): { is_snapshot: true; changes: Change[] } | null {
    if (!this.valid()) return null;
    const out: Change[] = [];
    this.levels(out, undefined, 'yes', this.book!.yes, false);
    this.levels(out, undefined, 'no', this.book!.no, false);
    return { is_snapshot: true, changes: out };
  }
}

const yesno = (m: Market): YesNoMarket => m as YesNoMarket;

export const yesnoFamily: FamilyDescriptor = {
  family: 'yesno-exchange',
  plan: 'free',
  tardisExchange: 'pmtape-yesno',
  kinds: ['yesno'],
  catalogue: 'yesno',
  aliases: (m) => [yesno(m).ticker],
  booksWithoutCatalog: true,
  idField: 'ticker',
  marketRecord: (m) => yesnoMarketRecord(yesno(m)),
  keep: (m, f) => {
    const y = yesno(m);
    return (
      (f.series === undefined || y.series_ticker === f.series) &&
      (f.status === undefined || y.status === f.status) &&
      overlaps(y.open_time, y.close_time, f.start, f.end)
    );
  },
  bookModel: (id, _market, view) => yesnoModel(id, view),
  replay: { idParam: 'ticker', byCoin: false, metrics: false, maxDepth: YESNO_MAX_DEPTH, book: (m) => new YesNoReplayBook(m) },
  routes: {
    name: 'yesno',
    prefixes: ['/v3/yesno-exchange'],
    marketsPath: '/markets',
    marketPath: '/:market_ticker',
    idParam: 'market_ticker',
    listUrl: () => '/v3/yesno-exchange/markets',
    noun: 'ticker',
    unknownMessage: (pathId, listUrl) => `Unknown ticker '${pathId.slice(0, 200)}'; list recorded tickers at ${listUrl}.`,
    marketFilters: {
      series: { type: 'string', minLength: 1, maxLength: 100 },
      status: { type: 'string', minLength: 1, maxLength: 40, description: "the venue's own status word" },
    },
    depth: { type: 'integer', minimum: 1, maximum: YESNO_MAX_DEPTH, description: 'levels per side, 1..100 (default all, at most 100)' },
    outcomes: false,
    includeOrderbook: { snapshots: false, latest: true },
    describe: {
      markets: 'Yes/no markets with their native upstream object.',
      snapshots: 'Order-book snapshots of one exact ticker, native units untouched.',
      latest: 'The newest recorded book of a ticker (stale: true when not recorded live), or as of `as_of`.',
    },
    schemas: { market: yesnoMarketSchema, snapshot: yesnoSnapshotSchema },
  },
};
