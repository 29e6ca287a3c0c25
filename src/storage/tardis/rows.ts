// Tardis-format CSV rows of one symbol (a book view of one market) for one compacted day, read from
// the day's Parquet partitions a row group at a time: `incremental_book_L2`, `book_snapshot_25` and
// `quotes` from `book_changes` (through the symbol's book state, book.ts), `trades` from `trades`.
// Memory holds one decoded row group and one book, whatever the day's size; text leaves in chunks
// of about 256 KiB (text-out.ts) for the caller to compress (files.ts).

import type { Family } from '../../schema/observation.js';
import { decodeDecimal } from '../parquet/decimal.js';
import type { ParquetStore } from '../parquet/reader.js';
import { booksOf, scalesOf, type Dataset } from '../parquet/datasets.js';
import { chunks, type Col } from './columns.js';
import { readSegment, type Segment, type TardisDecode } from './decoders.js';
import { TextOut } from './text-out.js';
import { LevelMap } from './levels.js';
import { L2Rows, TardisBook, decimalText, unscaled, type Amount, type Levels } from './book.js';

export const TARDIS_DATA_TYPES = ['incremental_book_L2', 'trades', 'book_snapshot_25', 'quotes'] as const;
export type TardisDataType = (typeof TARDIS_DATA_TYPES)[number];

/** Which book a symbol shows: one outcome token's, or one side's view of a yes/no book. */
export type TardisView = { readonly token: string } | { readonly yesno: 'yes' | 'no' };

export interface TardisRequest {
  readonly family: Family;
  readonly day: string;
  /** The datasets' `market_id`. */
  readonly market: string;
  readonly view: TardisView;
  readonly dataType: TardisDataType;
  /** The `exchange` and `symbol` cells. */
  readonly exchange: string;
  readonly symbol: string;
}

const SNAPSHOT_LEVELS = 25;

export function tardisHeader(t: TardisDataType): string {
  const head = 'exchange,symbol,timestamp,local_timestamp';
  if (t === 'incremental_book_L2') return `${head},is_snapshot,side,price,amount\n`;
  if (t === 'trades') return `${head},id,side,price,amount\n`;
  if (t === 'quotes') return `${head},ask_amount,ask_price,bid_price,bid_amount\n`;
  const cells: string[] = [];
  for (let i = 0; i < SNAPSHOT_LEVELS; i++) cells.push(`asks[${i}].price`, `asks[${i}].amount`, `bids[${i}].price`, `bids[${i}].amount`);
  return `${head},${cells.join(',')}\n`;
}

/** A decimal cell's text: exact for the unscaled integers the columns hold, up to 2^63. */
function decText(c: Col, i: number, scale: number): string {
  if (c.huge(i)) return decodeDecimal(c.big(i), scale, scale).replace(/\.?0+$/, '');
  return decimalText(c.num(i), scale);
}

/** A decimal cell as an `Amount`: its unscaled integer (`compact` by `div`), or (beyond 2^53, or null) its text. */
function amountOf(c: Col, i: number, scale: number, div: number): Amount {
  return c.huge(i) || c.isNull(i) ? decText(c, i, scale) : c.compactNum(i, div);
}

/** A decimal cell's unscaled integer, or (beyond 2^53, or null) its text. */
function cellOf(c: Col, i: number, scale: number): Amount {
  return c.huge(i) || c.isNull(i) ? decText(c, i, scale) : c.num(i);
}

/** `compact`'s divisor for sizes at `scale`: sizes of two decimals or fewer keep small. */
const divOf = (scale: number): number => 10 ** Math.max(0, scale - 2);

function writeAmount(w: TextOut, a: Amount, scale: number): void {
  if (typeof a === 'number') w.decimal(a, scale);
  else w.text(a);
}

/** `decimalText` remembering up to 100,000 texts (a day repeats a few thousand prices and sizes). */
function texts(scale: number): (k: number) => string {
  const m = new Map<number, string>();
  return (k) => {
    let s = m.get(k);
    if (s === undefined) {
      s = decimalText(k, scale);
      if (m.size < 100_000) m.set(k, s);
    }
    return s;
  };
}

const local = (c: Record<string, Col>, i: number): number => c.receive_time.num(i);
const venue = (c: Record<string, Col>, i: number): number => (c.source_time.isNull(i) ? c.receive_time.num(i) : c.source_time.num(i));

export type { TardisDecode };

/** Segments decoded ahead of the one being written: the helper keeps busy while this thread writes. */
const READ_AHEAD = 2;

/** The rows of one market in one dataset of one day, a decoded chunk at a time (typed, see columns.ts). */
async function* segments(
  store: ParquetStore,
  family: Family,
  dataset: Dataset,
  day: string,
  market: string,
  names: readonly string[],
  decode: TardisDecode,
): AsyncGenerator<{ n: number; c: Record<string, Col> }> {
  const files = await store.datasetFiles(family, dataset, day, market);
  if (!files) return;
  const read = (k: number): Promise<Segment> => {
    const s = files.segments[k];
    const p = readSegment(files.files.get(s.file)!, s, names, decode);
    p.catch(() => undefined); // observed when awaited; a reader that stops early leaves it unawaited
    return p;
  };
  // The next segments are read while this one's rows are written: the reads and decodes overlap the writing.
  const ahead: Promise<Segment>[] = [];
  let asked = 0;
  const fill = (): void => {
    while (asked < files.segments.length && ahead.length < (decode === 'worker' ? READ_AHEAD : 1)) ahead.push(read(asked++));
  };
  fill();
  try {
    while (ahead.length > 0) {
      const seg = await ahead.shift()!;
      fill();
      try {
        yield* chunks(seg.table, names);
      } finally {
        seg.release(); // its rows are written: the slot may take the next decode
      }
    }
  } finally {
    // A reader that stopped early: the segments read ahead go back once they arrive.
    for (const p of ahead)
      p.then(
        (seg) => seg.release(),
        () => undefined,
      );
  }
}

const BOOK_COLUMNS = ['receive_time', 'source_time', 'seq', 'token_id', 'record_type', 'is_snapshot', 'side', 'price', 'size'];
/** A yes/no book's prices also need their `units` (cents or dollars); the other books' column is not decoded. */
const YESNO_BOOK_COLUMNS = [...BOOK_COLUMNS, 'units'];
const TRADE_COLUMNS = ['receive_time', 'source_time', 'seq', 'token_id', 'price', 'size', 'side'];

/**
 * The CSV text of a request after its header, in chunks. `consumed`, when given, says how many of
 * the bytes yielded so far the reader is done with (zlib's input count): their buffers are reused.
 */
export async function* tardisBody(
  store: ParquetStore,
  req: TardisRequest,
  decode: TardisDecode = 'worker',
  consumed?: () => number,
): AsyncGenerator<Buffer> {
  const lead = `${req.exchange},${req.symbol},`;
  const w = new TextOut(consumed);
  if (req.dataType === 'trades') {
    const scales = scalesOf(req.family);
    const want = 'token' in req.view ? req.view.token : req.view.yesno;
    let prevSeq = -1,
      k = 0;
    for await (const { n, c } of segments(store, req.family, 'trades', req.day, req.market, TRADE_COLUMNS, decode)) {
      for (let i = 0; i < n; i++) {
        if (c.token_id.text(i) !== want) continue;
        const seq = c.seq.num(i);
        k = seq === prevSeq ? k + 1 : 0;
        prevSeq = seq;
        w.text(`${lead}${venue(c, i)},${local(c, i)},${k === 0 ? seq : `${seq}-${k}`},${c.side.text(i) ?? 'unknown'},`);
        writeAmount(w, cellOf(c.price, i, scales.price), scales.price);
        w.byte(44); // ,
        if (!c.size.isNull(i)) writeAmount(w, cellOf(c.size, i, scales.size), scales.size);
        w.byte(10); // \n
        if (w.full) yield w.take()!;
      }
    }
    const rest = w.take();
    if (rest) yield rest;
    return;
  }
  const yesno = booksOf(req.family) === 'yesno';
  const scales = scalesOf(req.family);
  const sizeScale = scales.size;
  // Yes/no prices are dollars at 6 decimals whatever the stored units (cents are 1/100 dollar).
  const priceScale = yesno ? 6 : scales.price;
  const one = 10 ** priceScale;
  const price = texts(priceScale);
  const sizeText = texts(sizeScale);
  const div = divOf(sizeScale);
  const amount = (a: Amount): string => (typeof a === 'number' ? sizeText(unscaled(a, div)) : a);
  const book = new TardisBook();
  const out = new L2Rows(div);
  const type = req.dataType;
  const leadBytes = Buffer.from(lead, 'utf8');
  // A row's cells before its price, by its kind (L2Rows: SNAPSHOT and ASK bits): four constant byte strings.
  const kinds = ['false,bid,', 'true,bid,', 'false,ask,', 'true,ask,'].map((k) => Buffer.from(k, 'latin1'));
  const emit = (ts: number, local: number): void => {
    if (type === 'incremental_book_L2') {
      const rows = out.length;
      if (rows === 0) return;
      // A batch's rows share their leading cells: written once, then copied.
      w.startHead();
      w.bytes(leadBytes);
      w.int(ts);
      w.byte(44); // ,
      w.int(local);
      w.byte(44);
      w.endHead();
      const { kind, price: prices, amount: amounts } = out;
      for (let r = 0; r < rows; r++) {
        if (r > 0) w.repeatHead();
        w.bytes(kinds[kind[r]]);
        w.decimalAt(prices, r, priceScale);
        w.byte(44);
        if (amounts[r] >= 0) w.decimalAt(amounts, r, sizeScale);
        else w.text(out.texts[r]);
        w.byte(10); // \n
      }
    } else if (type === 'quotes') {
      const q = book.quote(price, amount);
      if (q !== null) w.text(`${lead}${ts},${local},${q}\n`);
    } else {
      const top = book.top(SNAPSHOT_LEVELS, price, amount);
      if (top !== null) w.text(`${lead}${ts},${local},${top}\n`);
    }
    out.clear();
  };
  const view = req.view;
  const token = 'token' in view ? view.token : null;
  const yesSide = 'yesno' in view ? view.yesno : null;
  // The texts the rows are matched against, as bytes: compared in the column's own buffer (columns.ts).
  const utf8 = (x: string): Uint8Array => Buffer.from(x, 'utf8');
  const [tokenBytes, yesBytes, BID, BOOK, TICK, CENTS] = [token ?? '', yesSide ?? '', 'bid', 'book', 'tick_size', 'cents'].map(utf8);
  // The full book being gathered: its rows share (seq, token) and come together.
  let full: Levels | null = null;
  let scratch: Levels = { bids: new LevelMap(), asks: new LevelMap() };
  let fullSeq = -1,
    fullVenue = false,
    fullTs = 0,
    fullLocal = 0;
  const closeFull = (): void => {
    if (!full) return;
    scratch = book.full(full, fullVenue, out); // the old book's maps, cleared: the next full book's
    emit(fullTs, fullLocal);
    full = null;
  };
  for await (const { n, c } of segments(
    store,
    req.family,
    'book_changes',
    req.day,
    req.market,
    yesno ? YESNO_BOOK_COLUMNS : BOOK_COLUMNS,
    decode,
  )) {
    for (let i = 0; i < n; i++) {
      if (token !== null && !c.token_id.is(i, token, tokenBytes)) continue;
      const seq = c.seq.num(i);
      if (full && seq !== fullSeq) closeFull();
      if (c.record_type.is(i, 'tick_size', TICK)) continue; // a tick size is no level; docs/tardis.md
      if (c.is_snapshot.bool(i)) {
        if (!full) {
          full = scratch;
          fullSeq = seq;
          fullVenue = c.record_type.is(i, 'book', BOOK); // a venue snapshot; a checkpoint or a yes/no poll repeats the book
          fullTs = venue(c, i);
          fullLocal = local(c, i);
        }
        if (c.price.isNull(i)) continue; // an empty side's (or an empty book's) marker
        let k = c.price.num(i);
        const size = amountOf(c.size, i, sizeScale, div);
        if (yesno) {
          if (!c.units.is(i, 'cents', CENTS)) k *= 100;
          // The view's own ladder is its bids; the other ladder's bids are its asks at 1 − price.
          if (c.side.is(i, yesSide!, yesBytes)) full.bids.set(k, size);
          else full.asks.set(one - k, size);
        } else {
          (c.side.is(i, 'bid', BID) ? full.bids : full.asks).set(k, size);
        }
        continue;
      }
      if (c.side.isNull(i) || c.price.isNull(i)) continue;
      const side = c.side.is(i, 'bid', BID) ? 'bid' : 'ask'; // any other text was an ask's row before too
      book.update(side, c.price.num(i), amountOf(c.size, i, sizeScale, div), !c.size.isNull(i) && c.size.num(i) === 0, out);
      // A delta record's rows share its seq: its snapshot/quote row is written after its last row.
      const nextSame = i + 1 < n && c.seq.num(i + 1) === seq;
      if (!nextSame || type === 'incremental_book_L2') emit(venue(c, i), local(c, i));
      if (w.full) yield w.take()!;
    }
  }
  closeFull();
  const rest = w.take();
  if (rest) yield rest;
}
