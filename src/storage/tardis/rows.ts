// Tardis-format CSV rows of one symbol (a book view of one market) for one compacted day, read from
// the day's Parquet partitions a row group at a time: `incremental_book_L2`, `book_snapshot_25` and
// `quotes` from `book_changes` (through the symbol's book state, book.ts), `trades` from `trades`.
// Memory holds one decoded row group and one book, whatever the day's size; text leaves in chunks
// of about CHUNK_CHARS for the caller to compress (tardis.ts).

import type { Family } from '../../schema/observation.js';
import { decodeDecimal, type Unscaled } from '../parquet/decimal.js';
import { decodeColumns, type Columns } from '../parquet/records.js';
import type { ParquetStore } from '../parquet/reader.js';
import { columnsOf, booksOf, scalesOf, type Dataset } from '../parquet/schema.js';
import { TardisBook, decimalText, type L2Row, type Levels } from './book.js';

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
const CHUNK_CHARS = 1 << 16;

export function tardisHeader(t: TardisDataType): string {
  const head = 'exchange,symbol,timestamp,local_timestamp';
  if (t === 'incremental_book_L2') return `${head},is_snapshot,side,price,amount\n`;
  if (t === 'trades') return `${head},id,side,price,amount\n`;
  if (t === 'quotes') return `${head},ask_amount,ask_price,bid_price,bid_amount\n`;
  const cells: string[] = [];
  for (let i = 0; i < SNAPSHOT_LEVELS; i++) cells.push(`asks[${i}].price`, `asks[${i}].amount`, `bids[${i}].price`, `bids[${i}].amount`);
  return `${head},${cells.join(',')}\n`;
}

/** A decimal cell's text: exact for the unscaled integers the columns hold, numbers or bigints. */
function sizeText(v: unknown, scale: number): string {
  return typeof v === 'number' ? decimalText(v, scale) : decodeDecimal(v as Unscaled, scale, scale).replace(/\.?0+$/, '');
}

/** The rows of one market in one dataset of one day, a decoded row group (or part of one) at a time. */
async function* segments(store: ParquetStore, family: Family, dataset: Dataset, day: string, market: string, names: readonly string[]): AsyncGenerator<Columns> {
  const files = await store.datasetFiles(family, dataset, day, market);
  if (!files) return;
  const specs = columnsOf(family, dataset).filter((c) => names.includes(c.name));
  for (const s of files.segments) {
    const t = await files.files.get(s.file)!.reader.readRows(s.rg, s.start, s.rows, [...names]);
    yield decodeColumns(t, specs);
  }
}

const BOOK_COLUMNS = ['receive_time', 'source_time', 'seq', 'token_id', 'record_type', 'is_snapshot', 'side', 'price', 'size', 'units'];
const TRADE_COLUMNS = ['receive_time', 'source_time', 'seq', 'token_id', 'price', 'size', 'side'];

/** The CSV text of a request after its header, in chunks. */
export async function* tardisBody(store: ParquetStore, req: TardisRequest): AsyncGenerator<string> {
  const lead = `${req.exchange},${req.symbol},`;
  let buf = '';
  if (req.dataType === 'trades') {
    const scales = scalesOf(req.family);
    const want = 'token' in req.view ? req.view.token : req.view.yesno;
    let prevSeq = -1, k = 0;
    for await (const c of segments(store, req.family, 'trades', req.day, req.market, TRADE_COLUMNS)) {
      const n = c.seq.length;
      for (let i = 0; i < n; i++) {
        if (c.token_id[i] !== want) continue;
        const seq = c.seq[i] as number;
        k = seq === prevSeq ? k + 1 : 0;
        prevSeq = seq;
        const local = Math.round((c.receive_time[i] as number) * 1000);
        const src = c.source_time[i] as number | null;
        const ts = src === null ? local : Math.round(src * 1000);
        const size = c.size[i] === null ? '' : sizeText(c.size[i], scales.size);
        buf += `${lead}${ts},${local},${k === 0 ? seq : `${seq}-${k}`},${(c.side[i] as string | null) ?? 'unknown'},${sizeText(c.price[i], scales.price)},${size}\n`;
        if (buf.length >= CHUNK_CHARS) {
          yield buf;
          buf = '';
        }
      }
    }
    if (buf) yield buf;
    return;
  }
  const yesno = booksOf(req.family) === 'yesno';
  const scales = scalesOf(req.family);
  // Yes/no prices are dollars at 6 decimals whatever the stored units (cents are 1/100 dollar).
  const priceScale = yesno ? 6 : scales.price;
  const one = 10 ** priceScale;
  const texts = new Map<number, string>();
  const price = (k: number): string => {
    let s = texts.get(k);
    if (s === undefined) {
      s = decimalText(k, priceScale);
      if (texts.size < 100_000) texts.set(k, s);
    }
    return s;
  };
  const book = new TardisBook();
  const out: L2Row[] = [];
  const type = req.dataType;
  const emit = (ts: number, local: number): void => {
    if (type === 'incremental_book_L2') {
      for (const [snap, side, p, amount] of out) buf += `${lead}${ts},${local},${snap},${side},${price(p)},${amount}\n`;
    } else if (type === 'quotes') {
      const q = book.quote(price);
      if (q !== null) buf += `${lead}${ts},${local},${q}\n`;
    } else {
      const top = book.top(SNAPSHOT_LEVELS, price);
      if (top !== null) buf += `${lead}${ts},${local},${top}\n`;
    }
    out.length = 0;
  };
  const view = req.view;
  const token = 'token' in view ? view.token : null;
  const yesSide = 'yesno' in view ? view.yesno : null;
  // The full book being gathered: its rows share (seq, token) and come together.
  let full: { bids: Map<number, string>; asks: Map<number, string> } | null = null;
  let fullSeq = -1, fullVenue = false, fullTs = 0, fullLocal = 0;
  const closeFull = (): void => {
    if (!full) return;
    book.full(full as Levels, fullVenue, out);
    emit(fullTs, fullLocal);
    full = null;
  };
  for await (const c of segments(store, req.family, 'book_changes', req.day, req.market, BOOK_COLUMNS)) {
    const n = c.seq.length;
    for (let i = 0; i < n; i++) {
      if (token !== null && c.token_id[i] !== token) continue;
      const seq = c.seq[i] as number;
      if (full && seq !== fullSeq) closeFull();
      const rt = c.record_type[i] as string;
      if (rt === 'tick_size') continue; // a tick size is no level; docs/tardis.md
      const local = Math.round((c.receive_time[i] as number) * 1000);
      const src = c.source_time[i] as number | null;
      const ts = src === null ? local : Math.round(src * 1000);
      if (c.is_snapshot[i] === true) {
        if (!full) {
          full = { bids: new Map(), asks: new Map() };
          fullSeq = seq;
          fullVenue = rt === 'book'; // a venue snapshot; a checkpoint or a yes/no poll repeats the book
          fullTs = ts;
          fullLocal = local;
        }
        const pv = c.price[i];
        if (pv === null || pv === undefined) continue; // an empty side's (or an empty book's) marker
        let k = Number(pv);
        const size = sizeText(c.size[i], scales.size);
        if (yesno) {
          if (c.units[i] !== 'cents') k *= 100;
          // The view's own ladder is its bids; the other ladder's bids are its asks at 1 − price.
          if (c.side[i] === yesSide) full.bids.set(k, size);
          else full.asks.set(one - k, size);
        } else {
          (c.side[i] === 'bid' ? full.bids : full.asks).set(k, size);
        }
        continue;
      }
      const side = c.side[i] as 'bid' | 'ask' | null;
      if (side === null || c.price[i] === null) continue;
      const sv = c.size[i];
      book.update(side, Number(c.price[i]), sizeText(sv, scales.size), sv === 0 || sv === 0n, out);
      // A delta record's rows share its seq: its snapshot/quote row is written after its last row.
      const nextSame = i + 1 < n && c.seq[i + 1] === seq;
      if (!nextSame || type === 'incremental_book_L2') emit(ts, local);
    }
    if (buf.length >= CHUNK_CHARS) {
      yield buf;
      buf = '';
    }
  }
  closeFull();
  if (buf) yield buf;
}
