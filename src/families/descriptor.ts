// What a venue family is, in one place (after tardis-node, where an exchange is a mapper plus a feed
// registered in one map): the venue kinds that record it, its catalogue backfill, how its markets are
// named, and how the API and the stream shape its markets and books. A family is built only on the
// floors below it (book/, schema/, storage's door); the recorders and the API look it up.

import type { FastifyInstance } from 'fastify';
import type { TSchema } from 'typebox';
import type { Market } from '../schema/market.js';
import type { Family, GapReason } from '../schema/observation.js';
import type { BookModel, CursorPos } from '../book/book-model.js';
import type { ReplayBook, ReplayMarket } from '../book/replay-book.js';
import type { LogReader } from '../storage/index.js';

/**
 * The venue kinds, each a feed with its normalizer and importer under src/recorders/<kind>/ (the
 * recorders' own table, src/recorders/venues.ts, maps a name to them).
 */
export type VenueKind = 'catalog' | 'clob' | 'yesno' | 'wallet';

/** One view of a market's books: levels per side, outcome label (wallet), with or without levels. */
export interface BookView {
  readonly depth?: number;
  readonly outcome?: string;
  readonly includeOrderbook?: boolean;
}

/** The `/markets` filters a family may accept (each family declares which, in `routes.marketFilters`). */
export interface MarketFilter {
  readonly coin?: string;
  readonly window?: string;
  readonly status?: string;
  readonly series?: string;
  /** The query window [start, end) in epoch ms. */
  readonly start?: number;
  readonly end?: number;
}

/** How the family's REST routes are laid out and described (shapes are in the descriptor itself). */
export interface RouteBinding {
  /** Logical route name: cursors are bound to `${name}.markets`, `${name}.snapshots`, ... */
  readonly name: string;
  /** URL prefixes the routes answer under, identically (the wallet family has an alias). */
  readonly prefixes: readonly string[];
  /** Under the prefix: the market list, and one market (the path parameter `idParam` names it). */
  readonly marketsPath: string;
  readonly marketPath: string;
  readonly idParam: string;
  /** A path parameter that scopes markets (coin: `/v3/{coin}/...`), checked before the market. */
  readonly scope?: {
    readonly param: string;
    /** 404 unless the scope value is known. */
    check(app: FastifyInstance, value: string): Promise<void>;
    /** Null when `market` belongs to the scope value, else the 404 message. */
    mismatch(market: Market, value: string, pathId: string): string | null;
  };
  /** The market list a 404 points at. */
  listUrl(scopeValue: string | undefined): string;
  /** How messages name a market: `market` or `ticker`. */
  readonly noun: 'market' | 'ticker';
  /** The 404 message for a path id that names no market. */
  unknownMessage(pathId: string, listUrl: string): string;
  /** Query parameters this family's routes accept beyond the common ones (plain JSON Schema). */
  readonly marketFilters: { readonly [K in keyof Omit<MarketFilter, 'start' | 'end'>]?: TSchema };
  readonly depth: TSchema;
  /** `outcome=<label>` on latest and snapshots (a derived, mirrored view). */
  readonly outcomes: boolean;
  /** Defaults of `include_orderbook`; `latest: null` when latest has no such parameter. */
  readonly includeOrderbook: { readonly snapshots: boolean; readonly latest: boolean | null };
  readonly describe: { readonly markets: string; readonly snapshots: string; readonly latest: string };
  /** Response schemas: a market record, a snapshot object, and the snapshots page if it is not a plain list. */
  readonly schemas: { readonly market: object; readonly snapshot: object; readonly snapshotsPage?: object };
  /**
   * The family records metric samples of these names per outcome: `/:id/timeseries?metric=` serves
   * them, and `/:id/trades` answers the empty dataset (src/api/routes/series-routes.ts).
   */
  readonly series?: { readonly metrics: readonly [string, ...string[]] };
}

export interface IntervalRequest {
  readonly intervalMs: number;
  readonly order: 'asc' | 'desc';
  readonly limit: number;
  readonly start?: number;
  readonly end?: number;
  /** Cursor: asc = next bucket start; desc = exclusive upper bucket bound. */
  readonly resume?: number;
  /** Wall clock now (buckets that have not ended are never served). */
  readonly now: number;
  /** A live recorder holds this market: data is known up to now, else only up to the last record. */
  readonly connected: boolean;
}

export interface GapOut {
  start: string;
  end: string;
  reason: GapReason;
}

export interface IntervalPage {
  readonly items: Record<string, unknown>[];
  readonly gaps: GapOut[];
  readonly next: CursorPos | null;
}

/** Snapshots sampled on an interval grid (coin): `interval` on the snapshots route. */
export interface Sampling {
  readonly intervals: Readonly<Record<string, number>>;
  page(reader: LogReader, market: Market, req: IntervalRequest, view: BookView): Promise<IntervalPage>;
}

/** How `GET /v3/replay` names, selects and replays the family's markets. */
export interface ReplayBinding {
  /** The query parameter that names markets (`ticker` also accepts `market_id`). */
  readonly idParam: 'market_id' | 'ticker';
  /** `coin=` (with `window=`) may select the markets instead of ids. */
  readonly byCoin: boolean;
  /** The family records metric samples (`types=metric`). */
  readonly metrics: boolean;
  /** Most levels per side a replay serves. */
  readonly maxDepth: number;
  /** The book state of one market as its records are replayed. */
  book(m: ReplayMarket): ReplayBook;
}

export interface FamilyDescriptor {
  readonly family: Family;
  /** The plan a key needs for this family's routes, stream and datasets. */
  readonly plan: 'free' | 'paid';
  /** The `exchange` of its Tardis-format files (`GET /v1/<exchange>/...`, docs/tardis.md): its venue kind. */
  readonly tardisExchange: string;

  // ---- write side (the recorders look these kinds up in their own table) ----
  /** Venue kinds that record this family, in start order (each also has a `pmtape import --kind K` importer). */
  readonly kinds: readonly VenueKind[];
  /** `pmtape backfill catalog --family F`: the kind whose upstream listing is the family's catalogue. */
  readonly catalogue: VenueKind;

  // ---- catalogue ----
  /** Names a path may use for `m` besides its market id (condition id, slug, topic id, ...). */
  aliases(m: Market): readonly (string | null)[];
  /** Books may be recorded before the catalogue knows the market (yes/no tickers): serve them. */
  readonly booksWithoutCatalog: boolean;
  /** How stream messages name a market. */
  readonly idField: 'market_id' | 'ticker';

  // ---- read side ----
  /** The public market record (API.md). */
  marketRecord(m: Market): Record<string, unknown>;
  /** Is `m` in the `/markets` selection `f`? */
  keep(m: Market, f: MarketFilter): boolean;
  /**
   * The book model of one market view: which records make snapshots and their public shape. Null
   * when the family needs the catalogue entry (outcomes, tokens) and `market` is null.
   */
  bookModel(id: string, market: Market | null, view: BookView): BookModel | null;
  readonly sampling?: Sampling;
  readonly replay: ReplayBinding;
  readonly routes: RouteBinding;
}
