// The columns of each (family, dataset) Parquet pair, schema version 2: normalized, typed tables
// (Tardis-style `book_changes`, `trades`, `metrics`, `gaps`, `catalog`) with no JSON blob outside
// `catalog.native`. Every column here is documented in docs (datasets page); rows.ts fills them and
// records.ts rebuilds the stored records from them exactly.

import type { SampledMarket } from '../../book/sampled-books.js';
import type { Family } from '../../schema/observation.js';
import type { ColumnSpec } from './columns.js';
import { MARKETS_COLUMNS } from './markets-columns.js';

/** Bumped whenever any dataset's columns change; written in every footer and manifest entry. */
export const SCHEMA_VERSION = 2;

export type Dataset = 'book_changes' | 'book_snapshots' | 'trades' | 'metrics' | 'catalog' | 'gaps' | 'candles' | 'markets';
export const DATASETS: readonly Dataset[] = [
  'book_changes',
  'book_snapshots',
  'trades',
  'metrics',
  'catalog',
  'gaps',
  'candles',
  'markets',
];
/** The datasets made of records, served a range at a time by `GET /v3/datasets/rows` (book_snapshots is sampled from book state). */
export const ROW_DATASETS = ['book_changes', 'trades', 'gaps', 'metrics', 'catalog'] as const satisfies readonly Dataset[];
export type RowDataset = (typeof ROW_DATASETS)[number];

/** Schema version 1's one books dataset (the whole book per record plus the record as JSON). */
export type LegacyDataset = 'books';
export type AnyDataset = Dataset | LegacyDataset;
/** Every dataset folder name a data dir may hold (v2 first, then v1-only names). */
export const DATASET_FOLDERS: readonly AnyDataset[] = [...DATASETS, 'books'];

export type Stream = 'books' | 'metrics' | 'catalog';
/** Which log stream feeds a dataset. */
export const streamOfDataset = (d: AnyDataset): Stream => (d === 'metrics' || d === 'catalog' ? d : d === 'markets' ? 'catalog' : 'books');
/**
 * The v2 datasets that hold one stream's records (the read side rebuilds the records from them); the
 * first is the stream's primary (it holds the record index).
 */
export const datasetsOfStream = (s: Stream): readonly Dataset[] => (s === 'books' ? ['book_changes', 'trades', 'gaps'] : [s]);
/** Datasets derived from a stream's compacted records (not records themselves): built after them. */
export const derivedOfStream = (s: Stream): readonly Dataset[] =>
  s === 'books' ? ['book_snapshots', 'candles'] : s === 'catalog' ? ['markets'] : [];

/** `book_snapshots`: levels a side per row, and the grid (one row per second while the book is valid). */
export const SNAPSHOT_DEPTH = 25;
export const SNAPSHOT_INTERVAL_MS = 1000;

/** DECIMAL scales: probability prices and share sizes (coin, wallet); dollar prices and counts (yes/no). */
export const SCALES = {
  decimal: { price: 8, size: 8 },
  yesno: { price: 4, size: 2 },
} as const;
export const scalesOf = (f: Family): { price: number; size: number } => SCALES[FAMILY_TABLES[f].books];

type Opt = Partial<Pick<ColumnSpec, 'scale' | 'delta' | 'plain'>>;
const c = (name: string, kind: ColumnSpec['kind'], nullable: boolean, doc: string, o: Opt = {}): ColumnSpec => ({
  name,
  kind,
  nullable,
  doc,
  ...o,
});

const head = (): ColumnSpec[] => [
  c('market_id', 'utf8', false, 'market id (the ticker for yes/no)'),
  c('receive_time', 'ts', false, 'when pmtape received the message (our clock, UTC)', { delta: true }),
  c('source_time', 'ts', true, "the venue's own time, null when the venue gave none", { delta: true }),
  c(
    'seq',
    'int64',
    false,
    'per-market sequence number of the stored record: strictly increasing, never reused; the rows of one record share it',
    { delta: true },
  ),
];
// Last, so files written before it existed read the same (a missing column reads as null).
const RECORDER = c(
  'recorder',
  'utf8',
  true,
  "id of the recorder the row came from in a day merged from several recorders (docs/redundancy.md); null in a single recorder's day",
);
const tail = (): ColumnSpec[] => [
  c('origin', 'utf8', true, 'provenance: `ws`, `rest`, `import` or `recorder` (null when not recorded)'),
  c('import_id', 'utf8', true, 'content hash of an imported record (de-duplication), else null'),
  c('checkpoint', 'bool', false, 'the record was marked as a full-book checkpoint in its log (as-of reads start there)'),
  RECORDER,
];
const dec = (name: string, scale: number, nullable: boolean, doc: string): ColumnSpec[] => [
  c(name, 'decimal', nullable, doc, { scale }),
  c(
    `${name}_decimals`,
    'int32',
    nullable,
    `digits after the point in the venue's text of \`${name}\` (+64 when the text had no leading zero, as in \`.48\`): \`${name}\` printed with this many decimals is the text the venue sent`,
  ),
];

function bookChanges(f: Family): ColumnSpec[] {
  const s = scalesOf(f);
  const yn = FAMILY_TABLES[f].books === 'yesno';
  return [
    ...head(),
    c('token_id', 'utf8', true, yn ? 'always null (a yes/no market has one book; see `side`)' : 'outcome token whose book the row changes'),
    c(
      'outcome',
      'utf8',
      true,
      yn ? '`yes` or `no` (the ladder)' : "outcome label of `token_id` from the market's catalogue entry (null when unknown)",
    ),
    c(
      'record_type',
      'utf8',
      false,
      yn
        ? '`yesno_book` (every poll is a full book)'
        : '`book` (venue snapshot), `book_delta`, `book_checkpoint` (recorder checkpoint) or `tick_size`',
    ),
    c(
      'is_snapshot',
      'bool',
      false,
      'true: this row belongs to a full book that replaces the whole book of its token (all rows of one `seq` and token together)',
    ),
    c(
      'side',
      'utf8',
      true,
      yn
        ? '`yes` or `no` (both ladders are bids)'
        : '`bid` or `ask`; null on a `tick_size` row and on a marker row of a record with no levels',
    ),
    ...dec(
      'price',
      s.price,
      true,
      yn
        ? "price level in the book's `units` (dollars or cents); null on the row that says a side of a full book is empty"
        : 'price level; null on the row that says a side of a full book is empty; on a `tick_size` row the new tick size',
    ),
    ...dec(
      'size',
      s.size,
      true,
      yn
        ? 'size at the price (contracts); null on an empty-side row'
        : 'total size at the price after the change, 0 = the level is removed; null on an empty-side row; on a `tick_size` row the old tick size',
    ),
    c(
      'units',
      'utf8',
      true,
      yn
        ? '`dollars` (fixed-point dollar text) or `cents` (legacy integer cents and counts)'
        : '`decimal` on full books and checkpoints, null on deltas',
    ),
    ...(yn
      ? []
      : [
          ...dec('best_bid', s.price, true, 'best bid the venue reported after a delta (a hint to detect a lost delta), else null'),
          ...dec('best_ask', s.price, true, 'best ask the venue reported after a delta, else null'),
          c('version', 'int64', true, 'venue book version of a full book (wallet), else null'),
          c('hash', 'utf8', true, 'venue book hash of a full book (clob), else null'),
        ]),
    ...(yn ? [c('poll_interval_ms', 'int64', true, 'the adaptive poll cadence in force when the book was taken')] : []),
    ...tail(),
  ];
}

function trades(f: Family): ColumnSpec[] {
  const s = scalesOf(f);
  return [
    ...head(),
    c('token_id', 'utf8', false, 'outcome token traded'),
    c('outcome', 'utf8', true, "outcome label of `token_id` from the market's catalogue entry (null when unknown)"),
    ...dec('price', s.price, false, 'trade price'),
    ...dec('size', s.size, true, 'trade size, null when the venue gave none'),
    c('side', 'utf8', true, '`buy` or `sell` (aggressor), null when the venue gave none'),
    ...dec('fee_rate_bps', 8, true, 'fee rate in basis points, null when the venue gave none'),
    c('tx_hash', 'utf8', true, 'settlement transaction hash, null when the venue gave none'),
    ...tail(),
  ];
}

/** Which book a `book_snapshots` row shows: each outcome token's, the first outcome's only, or the yes/no book. */
export type SnapshotBooks = SampledMarket;

function bookSnapshots(f: Family): ColumnSpec[] {
  const s = scalesOf(f);
  const yn = FAMILY_TABLES[f].snapshots === 'yesno';
  const [bid, ask] = yn ? ['yes', 'no'] : ['bid', 'ask'];
  // The level columns are PLAIN under ZSTD, no dictionary: a level's value repeats second after
  // second while the book holds, and a dictionary page per row group cost both bytes and time
  // (`npm run bench -- parquet` writes the benchmark's coin day both ways).
  const levels: ColumnSpec[] = [];
  for (let i = 0; i < SNAPSHOT_DEPTH; i++) {
    levels.push(
      c(
        `${bid}_price_${i}`,
        'decimal',
        true,
        i === 0 ? `price of ${yn ? 'yes bid' : 'bid'} level 0 (the best) … ${SNAPSHOT_DEPTH - 1}; null past the book's depth` : '',
        { scale: s.price, plain: true },
      ),
      c(`${bid}_size_${i}`, 'decimal', true, i === 0 ? `size at \`${bid}_price_<i>\`` : '', { scale: s.size, plain: true }),
      c(
        `${ask}_price_${i}`,
        'decimal',
        true,
        i === 0 ? `price of ${yn ? 'no bid' : 'ask'} level 0 (the best) … ${SNAPSHOT_DEPTH - 1}; null past the book's depth` : '',
        { scale: s.price, plain: true },
      ),
      c(`${ask}_size_${i}`, 'decimal', true, i === 0 ? `size at \`${ask}_price_<i>\`` : '', { scale: s.size, plain: true }),
    );
  }
  return [
    c('market_id', 'utf8', false, 'market id (the ticker for yes/no)'),
    c('bucket_start', 'ts', false, 'the second this row describes, [bucket_start, bucket_start + 1 s): the book as it stood at its end', {
      delta: true,
    }),
    c('receive_time', 'ts', false, 'receive time of the newest book record the row shows (as `/snapshots?interval=1s` names it)', {
      delta: true,
    }),
    c('source_time', 'ts', true, "the venue's time of that record, null when it gave none", { delta: true }),
    c('seq', 'int64', false, 'seq of that record', { delta: true }),
    c('token_id', 'utf8', true, yn ? 'always null (one yes/no book per market)' : 'outcome token of the book'),
    c('outcome', 'utf8', true, yn ? 'always null' : "outcome label of `token_id` from the market's catalogue"),
    ...(yn ? [c('units', 'utf8', false, '`dollars` or `cents`: the unit of every price of the row')] : []),
    c(
      'best_bid',
      'decimal',
      true,
      yn ? 'best yes bid (`yes_price_0`); null when the yes side is empty' : 'best bid (`bid_price_0`); null when the side is empty',
      { scale: s.price },
    ),
    c(
      'best_ask',
      'decimal',
      true,
      yn
        ? 'implied yes ask: 1 dollar (100 cents) minus the best no bid; null when the no side is empty'
        : 'best ask (`ask_price_0`); null when the side is empty',
      { scale: s.price },
    ),
    c('mid', 'decimal', true, '(best_bid + best_ask) / 2, exact (one more decimal); null unless both exist', { scale: s.price + 1 }),
    ...levels,
    RECORDER,
  ];
}

/** `candles`: one row per minute, market and outcome while its book was valid for part of the minute (storage/candles/). */
function candles(f: Family): ColumnSpec[] {
  const s = scalesOf(f);
  const yn = FAMILY_TABLES[f].snapshots === 'yesno';
  const ohlc = (k: string, scale: number, what: string): ColumnSpec[] =>
    (['open', 'high', 'low', 'close'] as const).map((p) =>
      c(
        `${k}_${p}`,
        'decimal',
        true,
        p === 'open' ? `${what}: open (at the minute's start, or when the book became valid), high, low, close; null when none` : '',
        { scale },
      ),
    );
  return [
    c('market_id', 'utf8', false, 'market id (the ticker for yes/no)'),
    c('candle_start', 'ts', false, 'the minute the row describes, [candle_start, candle_start + 1 min)', { delta: true }),
    c('receive_time', 'ts', false, 'receive time of the newest record the candle shows (its close)', { delta: true }),
    c('source_time', 'ts', true, "the venue's time of that record, null when it gave none", { delta: true }),
    c('seq', 'int64', false, 'seq of that record', { delta: true }),
    c('token_id', 'utf8', true, yn ? 'always null (one yes/no book per market)' : 'outcome token'),
    c(
      'outcome',
      'utf8',
      false,
      yn
        ? 'always `yes` (prices of the yes side)'
        : "outcome label from the market's catalogue (the second outcome of a wallet market is the mirror of the first's book)",
    ),
    ...(yn ? [c('units', 'utf8', true, '`dollars` or `cents`: the unit of every price of the row')] : []),
    ...ohlc('mid', s.price + 1, '(best bid + best ask) / 2, exact (one more decimal)'),
    ...ohlc('last', s.price, 'trade prices in the minute'),
    c('best_bid', 'decimal', true, 'best bid at the close; null when the side is empty', { scale: s.price }),
    c(
      'best_ask',
      'decimal',
      true,
      yn ? 'implied yes ask at the close (1 dollar or 100 cents less the best no bid)' : 'best ask at the close',
      { scale: s.price },
    ),
    c('volume', 'decimal', false, 'sum of the trade sizes in the minute (0 when none)', { scale: s.size }),
    c('trades', 'int64', false, 'number of trades in the minute'),
    c(
      'gap_seconds',
      'decimal',
      false,
      'seconds of the minute (up to the last known instant) the book was not valid: a gap, or before capture began',
      { scale: 3 },
    ),
  ];
}

const METRICS: ColumnSpec[] = [
  ...head(),
  c('metric', 'utf8', false, '`chance`, `price` or `last_trade` (three series, never merged)'),
  c('outcome', 'utf8', false, 'outcome label the sample is about'),
  c('token_id', 'utf8', true, 'outcome token id, when known'),
  c('value', 'f64', false, 'the sample value as the venue gave it (a binary double, as received)'),
  ...tail(),
];

const GAPS: ColumnSpec[] = [
  ...head(),
  c('reason', 'utf8', false, '`not_recording`, `disconnected`, `sequence_gap`, `upstream_error`, `stale` or `storage_error`'),
  c('start_time', 'ts', false, 'first instant the book was not trustworthy'),
  c('end_time', 'ts', true, 'when a fresh book arrived; null on the record written when the feed was lost'),
  c('token_id', 'utf8', true, 'the one outcome book concerned, null for the whole market'),
  c('detail', 'utf8', true, 'free-text detail'),
  ...tail(),
];

const ts = (name: string, doc: string): ColumnSpec => c(name, 'ts', true, doc);
const txt = (name: string, doc: string, nullable = true): ColumnSpec => c(name, 'utf8', nullable, doc);
const catalogHead = (): ColumnSpec[] => [
  ...head(),
  c('event', 'utf8', false, '`listed`, `updated`, `status` or `resolved`'),
  c('changed', 'list_utf8', false, 'names of the market fields that changed'),
  c('fields', 'list_utf8', false, 'names of the fields the stored market entry had, in order (a field not listed was absent, not null)'),
];
const outcomes = (): ColumnSpec[] => [
  c('outcome_labels', 'list_utf8', true, 'outcome labels, first outcome first'),
  c('outcome_token_ids', 'list_utf8', true, 'outcome token ids, matching `outcome_labels`'),
];
const lifecycle = (): ColumnSpec[] => [
  txt('coin', 'underlying coin (`btc`, ...)'),
  txt('window', 'market window (`15m`, `1h`, ...)'),
  ts('start_time', 'market start'),
  ts('end_time', 'market end'),
  ts('created_time', 'created upstream'),
  ts('updated_time', 'last updated upstream'),
  txt('status', '`upcoming`, `open`, `closed`, `resolved` or `cancelled`'),
  txt('resolution', '`resolved`, `push`, `pending` or `disputed`'),
  txt('winning_outcome', 'label of the winning outcome once resolved'),
  ts('resolved_time', 'when it resolved'),
  c('volume', 'f64', true, 'traded volume as the venue reports it'),
  c('liquidity', 'f64', true, 'liquidity as the venue reports it'),
];
const NATIVE = txt('native', 'the upstream object as last received, as JSON (the only JSON column of any dataset)');

const coinCatalog = (): ColumnSpec[] => [
  ...catalogHead(),
  txt('event_id', 'upstream event id'),
  txt('condition_id', 'condition id'),
  txt('slug', 'upstream slug'),
  txt('question', 'market question'),
  ...outcomes(),
  ...lifecycle(),
  NATIVE,
  ...tail(),
];
const walletCatalog = (): ColumnSpec[] => [
  ...catalogHead(),
  txt('topic_id', 'wallet venue topic id'),
  txt('condition_id', 'condition id'),
  txt('slug', 'upstream slug'),
  ...outcomes(),
  ...lifecycle(),
  c('participants', 'int64', true, 'number of participants'),
  c('chain_id', 'int64', true, 'settlement chain id'),
  txt('exchange_contract', 'exchange contract address'),
  c('start_price', 'f64', true, 'reference price at the start'),
  c('end_price', 'f64', true, 'reference price at the end'),
  NATIVE,
  ...tail(),
];
const yesnoCatalog = (): ColumnSpec[] => [
  ...catalogHead(),
  txt('ticker', 'market ticker (= market_id)'),
  txt('event_ticker', 'event ticker'),
  txt('series_ticker', 'series ticker'),
  txt('title', 'market title'),
  txt('status', "the venue's own status word (`active`, `closed`, `finalized`, ...)"),
  ts('open_time', 'market open'),
  ts('close_time', 'market close'),
  txt('result', '`yes`, `no` or empty'),
  NATIVE,
  ...tail(),
];

/**
 * What differs by family in its datasets: the books it records (`decimal`: outcome-token books in
 * decimal text; `yesno`: whole yes/no books in dollars or cents) and its catalogue's columns. A new
 * family is a compile error here until it has its entry.
 */
interface FamilyTables {
  readonly books: keyof typeof SCALES;
  /**
   * Which books `book_snapshots` holds and when they are valid, as `/snapshots?interval=` decides
   * it: coin markets need every outcome's book, a wallet market its first (the stored one; the
   * others are its mirror), a yes/no market its whole book.
   */
  readonly snapshots: SnapshotBooks;
  readonly catalog: () => ColumnSpec[];
}
const FAMILY_TABLES: Readonly<Record<Family, FamilyTables>> = {
  coin: { books: 'decimal', snapshots: 'every_outcome', catalog: coinCatalog },
  'wallet-prediction': { books: 'decimal', snapshots: 'first_outcome', catalog: walletCatalog },
  'yesno-exchange': { books: 'yesno', snapshots: 'yesno', catalog: yesnoCatalog },
};

export const snapshotBooksOf = (f: Family): SnapshotBooks => FAMILY_TABLES[f].snapshots;
/** The books a family records: `decimal` outcome-token books or whole `yesno` books. */
export const booksOf = (f: Family): keyof typeof SCALES => FAMILY_TABLES[f].books;

const cache = new Map<string, readonly ColumnSpec[]>();

/** The columns of (family, dataset): one schema across all partitions of the pair. */
export function columnsOf(family: Family, dataset: Dataset): readonly ColumnSpec[] {
  const k = `${family}/${dataset}`;
  let cols = cache.get(k);
  if (!cols) {
    cols =
      dataset === 'book_changes'
        ? bookChanges(family)
        : dataset === 'book_snapshots'
          ? bookSnapshots(family)
          : dataset === 'candles'
            ? candles(family)
            : dataset === 'markets'
              ? MARKETS_COLUMNS
              : dataset === 'trades'
                ? trades(family)
                : dataset === 'metrics'
                  ? METRICS
                  : dataset === 'gaps'
                    ? GAPS
                    : FAMILY_TABLES[family].catalog();
    cache.set(k, cols);
  }
  return cols;
}
