// The one schema of each (family, dataset) Parquet pair, and how stored records become rows. Every
// row keeps `record`, the stored observation as JSON exactly as logged, so the read side answers
// identically after compaction; the other columns are the researcher's view (numbers, lists).

import type { Family, Ladder, Recorded } from '../../schema/observation.js';
import { MarketBooks } from '../../book/book-state.js';
import type { ColumnSpec } from './file.js';

/** Bumped whenever any dataset's columns change; written in every footer and manifest entry. */
export const SCHEMA_VERSION = 1;

export type Dataset = 'books' | 'metrics' | 'catalog' | 'gaps';
export const DATASETS: readonly Dataset[] = ['books', 'metrics', 'catalog', 'gaps'];

const c = (name: string, kind: ColumnSpec['kind'], nullable: boolean, doc: string): ColumnSpec => ({ name, kind, nullable, doc });

const COMMON: ColumnSpec[] = [
  c('market_id', 'utf8', false, 'market id (the ticker for yes/no)'),
  c('receive_time', 'ts', false, 'when pmtape received the message (our clock, UTC)'),
  c('source_time', 'ts', true, "the venue's own time, null when the venue gave none"),
  c('seq', 'int64', false, 'per-market sequence number: strictly increasing, never reused'),
  c('type', 'utf8', false, 'stored record type (see below)'),
];
const RECORD = c('record', 'utf8', false, 'the stored record as JSON, exactly as logged (lossless; pmtape reads this back)');
const CHECKPOINT = c('checkpoint', 'bool', false, 'true when the log marked this record as a full-book checkpoint (as-of reads start there)');

const DECIMAL_BOOKS: ColumnSpec[] = [
  ...COMMON,
  c('token_id', 'utf8', true, 'outcome token the book/trade/delta is about (null for checkpoints and market-wide gaps)'),
  c('bid_prices', 'list_f64', true, 'full bid ladder prices, best first (the whole book after this record; null when the row holds no book)'),
  c('bid_sizes', 'list_f64', true, 'sizes matching bid_prices'),
  c('ask_prices', 'list_f64', true, 'full ask ladder prices, best first'),
  c('ask_sizes', 'list_f64', true, 'sizes matching ask_prices'),
  c('best_bid_price', 'f64', true, 'best (first) bid price'),
  c('best_bid_size', 'f64', true, 'size at the best bid'),
  c('best_ask_price', 'f64', true, 'best (first) ask price'),
  c('best_ask_size', 'f64', true, 'size at the best ask'),
  c('trade_price', 'f64', true, 'price of a `trade` row'),
  c('trade_size', 'f64', true, 'size of a `trade` row, when the venue gave one'),
  c('trade_side', 'utf8', true, '`buy`/`sell` of a `trade` row, when the venue gave one'),
  RECORD,
  CHECKPOINT,
];

const YESNO_BOOKS: ColumnSpec[] = [
  ...COMMON,
  c('units', 'utf8', true, '`dollars` (fixed-point dollar text) or `cents` (legacy integer cents and counts)'),
  c('yes_prices', 'list_utf8', true, 'YES bid ladder prices in native text and units, best first'),
  c('yes_sizes', 'list_utf8', true, 'sizes matching yes_prices, native text'),
  c('no_prices', 'list_utf8', true, 'NO bid ladder prices in native text and units, best first'),
  c('no_sizes', 'list_utf8', true, 'sizes matching no_prices, native text'),
  c('best_yes_price', 'f64', true, 'best YES bid price as a number (in `units`)'),
  c('best_yes_size', 'f64', true, 'size at the best YES bid, as a number'),
  c('best_no_price', 'f64', true, 'best NO bid price as a number (in `units`)'),
  c('best_no_size', 'f64', true, 'size at the best NO bid, as a number'),
  RECORD,
  CHECKPOINT,
];

const METRICS: ColumnSpec[] = [
  ...COMMON,
  c('metric', 'utf8', false, '`chance`, `price` or `last_trade` (never merged)'),
  c('outcome', 'utf8', false, 'outcome label the sample is about'),
  c('token_id', 'utf8', true, 'outcome token id, when known'),
  c('value', 'f64', false, 'the sample value'),
  RECORD,
  CHECKPOINT,
];

const CATALOG: ColumnSpec[] = [
  ...COMMON,
  c('event', 'utf8', false, '`listed`, `updated`, `status` or `resolved`'),
  c('changed', 'list_utf8', false, 'names of the market fields that changed'),
  c('status', 'utf8', true, 'market status after the event'),
  RECORD,
  CHECKPOINT,
];

const GAPS: ColumnSpec[] = [
  ...COMMON,
  c('reason', 'utf8', false, '`not_recording`, `disconnected`, `sequence_gap`, `upstream_error` or `stale`'),
  c('start_time', 'ts', false, 'first instant the book was not trustworthy'),
  c('end_time', 'ts', true, 'when a fresh book arrived; null on the record written when the feed was lost'),
  c('token_id', 'utf8', true, 'the one outcome book concerned, null for the whole market'),
  c('detail', 'utf8', true, 'free-text detail'),
];

/** The columns of (family, dataset): one schema across all partitions of the pair. */
export function columnsOf(family: Family, dataset: Dataset): readonly ColumnSpec[] {
  switch (dataset) {
    case 'books': return family === 'yesno-exchange' ? YESNO_BOOKS : DECIMAL_BOOKS;
    case 'metrics': return METRICS;
    case 'catalog': return CATALOG;
    case 'gaps': return GAPS;
  }
}

/** Which log stream feeds a dataset (gaps are the gap records of the books stream). */
export const streamOfDataset = (d: Dataset): 'books' | 'metrics' | 'catalog' => (d === 'gaps' ? 'books' : d);

type Row = Record<string, unknown>;

const nums = (l: Ladder, i: 0 | 1): number[] => l.map((x) => Number(x[i]));
const txt = (l: Ladder, i: 0 | 1): string[] => l.map((x) => x[i]);
const num0 = (l: Ladder | undefined, i: 0 | 1): number | null => (l && l.length ? Number(l[0][i]) : null);

/** A stored record and whether its log frame was checkpoint-marked. */
export interface SourceRecord {
  readonly rec: Recorded;
  readonly checkpoint: boolean;
}

function base(market: string, r: Recorded, checkpoint: boolean): Row {
  return { market_id: market, receive_time: r.recv_ts, source_time: r.source_ts, seq: r.seq, type: r.type, record: JSON.stringify(r), checkpoint };
}

/**
 * Turns one market's records (in seq order) into rows of `dataset`. Book rows carry the whole book
 * after the record (deltas are applied to the book kept since the last full book of that token).
 */
export function rowsOf(family: Family, dataset: Dataset, market: string, recs: Iterable<SourceRecord>, seed: Iterable<Recorded> = []): Row[] {
  const out: Row[] = [];
  const books = new MarketBooks();
  // Records of earlier days (from the last checkpoint on) so deltas early in the day have a book.
  for (const r of seed) books.apply(r);
  for (const { rec: r, checkpoint } of recs) {
    if (dataset === 'gaps') {
      if (r.type !== 'gap') continue;
      const row = base(market, r, checkpoint);
      delete row.record;
      delete row.checkpoint;
      out.push({ ...row, reason: r.reason, start_time: r.start_ts, end_time: r.end_ts, token_id: r.token_id ?? null, detail: r.detail ?? null });
      continue;
    }
    const row = base(market, r, checkpoint);
    if (r.type === 'metric') Object.assign(row, { metric: r.metric, outcome: r.outcome, token_id: r.token_id ?? null, value: r.value });
    else if (r.type === 'catalog') {
      Object.assign(row, { event: r.event, changed: [...r.changed], status: (r.market as { status?: string }).status ?? null });
    } else if (r.type === 'yesno_book') {
      Object.assign(row, {
        units: r.units, yes_prices: txt(r.yes, 0), yes_sizes: txt(r.yes, 1), no_prices: txt(r.no, 0), no_sizes: txt(r.no, 1),
        best_yes_price: num0(r.yes, 0), best_yes_size: num0(r.yes, 1), best_no_price: num0(r.no, 0), best_no_size: num0(r.no, 1),
      });
    } else if (family !== 'yesno-exchange') {
      books.apply(r);
      const token = 'token_id' in r ? (r.token_id ?? null) : null;
      row.token_id = token;
      if (r.type === 'trade') {
        Object.assign(row, { trade_price: Number(r.price), trade_size: r.size === undefined ? null : Number(r.size), trade_side: r.side ?? null });
      }
      const view = (r.type === 'book' || r.type === 'book_delta') && token !== null ? books.view(token) : null;
      if (view) {
        Object.assign(row, {
          bid_prices: nums(view.bids, 0), bid_sizes: nums(view.bids, 1), ask_prices: nums(view.asks, 0), ask_sizes: nums(view.asks, 1),
          best_bid_price: num0(view.bids, 0), best_bid_size: num0(view.bids, 1), best_ask_price: num0(view.asks, 0), best_ask_size: num0(view.asks, 1),
        });
      }
    }
    out.push(row);
  }
  return out;
}

/** Rows → one value array per column of `specs` (missing values become null). */
export function toColumns(specs: readonly ColumnSpec[], rows: readonly Row[]): unknown[][] {
  return specs.map((s) => rows.map((r) => (r[s.name] === undefined ? null : r[s.name])));
}
