// The normalized observation records pmtape stores: one readonly discriminated union on `type`.
// Every module (recorders, storage, API, Parquet, stream) imports these types; nothing else defines
// record shapes. Times are integer epoch milliseconds: `recv_ts` is when we received the message,
// `source_ts` the venue's own time (null when the venue gave none). They are never merged.

/** Route families of the public API; also the first level of the on-disk layout. */
export type Family = 'coin' | 'wallet-prediction' | 'yesno-exchange';
export const FAMILIES: readonly Family[] = ['coin', 'wallet-prediction', 'yesno-exchange'];

/** The record streams kept per market: one append log per (family, stream, market, UTC day). */
export type StreamName = 'books' | 'metrics' | 'catalog';
export const STREAMS: readonly StreamName[] = ['books', 'metrics', 'catalog'];

/**
 * Units a book's price/size text is in. `decimal`: probability-priced decimal text in [0, 1] and
 * share sizes (clob, wallet). `dollars`: the yes/no venue's fixed-point dollar strings.
 * `cents`: the yes/no venue's legacy integer cents and counts.
 */
export type PriceUnits = 'decimal' | 'dollars' | 'cents';

/**
 * One price level as upstream text: [price, size]. Text, not numbers, so native values are kept
 * exactly (the yes/no family must never be rounded); the API turns decimal text into numbers.
 */
export type Level = readonly [price: string, size: string];
export type Ladder = readonly Level[];

/** Where a record came from, kept for provenance. */
export type Origin = 'ws' | 'rest' | 'import' | 'recorder';

interface Base {
  /** Receive time, epoch ms (our clock). For a bare imported message: its source time. */
  readonly recv_ts: number;
  /** Venue time, epoch ms, or null when the venue gave none. */
  readonly source_ts: number | null;
  /** Provenance. Imported records also carry `import_id` (a content hash used to de-duplicate). */
  readonly origin?: Origin;
  readonly import_id?: string;
  /**
   * The recorder whose observation this is, set on the records of a day merged from several
   * recorders (`pmtape archive merge`); absent on a recorder's own records.
   */
  readonly recorder?: string;
}

/** A full book of one outcome token, best first on both sides (replaces that token's book). */
export interface BookSnapshot extends Base {
  readonly type: 'book';
  readonly token_id: string;
  readonly units: PriceUnits;
  readonly bids: Ladder;
  readonly asks: Ladder;
  /** Upstream ordering hints where the venue has them (wallet `version`, clob `hash`). */
  readonly version?: number;
  readonly hash?: string;
}

/** Incremental change of one token's book: each change sets the total size at a price; "0" removes. */
export interface BookDelta extends Base {
  readonly type: 'book_delta';
  readonly token_id: string;
  readonly changes: readonly { readonly side: 'bid' | 'ask'; readonly price: string; readonly size: string }[];
  /** Top of book the venue reported after these changes (clob), used to detect a lost delta. */
  readonly best_bid?: string;
  readonly best_ask?: string;
}

/**
 * Periodic full state of every token book of a market, written by the recorder (every N deltas or
 * S seconds, and after a re-snapshot) so an as-of book needs one checkpoint plus bounded deltas.
 * Not an observation of its own: the snapshots routes skip it.
 */
export interface BookCheckpoint extends Base {
  readonly type: 'book_checkpoint';
  readonly units: PriceUnits;
  readonly books: readonly { readonly token_id: string; readonly bids: Ladder; readonly asks: Ladder }[];
}

/**
 * A yes/no venue book: both sides are bid ladders (a NO bid at q is a YES ask at 1 − q), kept in
 * native text and units, best first. `poll_interval_ms` records the adaptive cadence in force.
 */
export interface YesNoBook extends Base {
  readonly type: 'yesno_book';
  readonly units: 'dollars' | 'cents';
  readonly yes: Ladder;
  readonly no: Ladder;
  readonly poll_interval_ms?: number;
}

/** A last-trade print. */
export interface Trade extends Base {
  readonly type: 'trade';
  readonly token_id: string;
  readonly price: string;
  readonly size?: string;
  readonly side?: 'buy' | 'sell';
  readonly fee_rate_bps?: string;
  readonly tx_hash?: string;
}

export interface TickSizeChange extends Base {
  readonly type: 'tick_size';
  readonly token_id: string;
  readonly old_tick_size: string;
  readonly new_tick_size: string;
}

export type GapReason = 'not_recording' | 'disconnected' | 'sequence_gap' | 'upstream_error' | 'stale' | 'storage_error';

/**
 * An explicit hole in a market's book coverage. Written with `end_ts: null` the moment the feed
 * is lost (books are invalid from `start_ts` on), and again with both ends once a fresh book has
 * been received (the closed span is authoritative for coverage). `token_id` narrows a gap to one
 * outcome book; absent means the whole market.
 */
export interface Gap extends Base {
  readonly type: 'gap';
  readonly reason: GapReason;
  readonly start_ts: number;
  readonly end_ts: number | null;
  readonly token_id?: string;
  readonly detail?: string;
}

export type MetricName = 'chance' | 'price' | 'last_trade';
export const METRICS: readonly MetricName[] = ['chance', 'price', 'last_trade'];

/** One sample of one metric series; the three series are never merged. */
export interface MetricSample extends Base {
  readonly type: 'metric';
  readonly metric: MetricName;
  readonly outcome: string;
  readonly token_id?: string;
  readonly value: number;
}

export type CatalogEventKind = 'listed' | 'updated' | 'status' | 'resolved';

/**
 * A change of a market's catalogue entry. Carries the full normalized market after the change
 * (so the latest state is the last event) and the names of the fields that changed.
 */
export interface CatalogEvent extends Base {
  readonly type: 'catalog';
  readonly event: CatalogEventKind;
  readonly changed: readonly string[];
  readonly market: import('./market.js').Market;
}

export type BookObservation = BookSnapshot | BookDelta | BookCheckpoint | YesNoBook | Trade | TickSizeChange | Gap;
export type Observation = BookObservation | MetricSample | CatalogEvent;
export type ObservationType = Observation['type'];

/** A stored observation: the log assigns `seq`, strictly increasing per (family, stream, market). */
export type Recorded<T extends Observation = Observation> = T & { readonly seq: number };
