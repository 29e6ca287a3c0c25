// Stored records → rows of the schema-version-2 datasets (datasets.ts). Lossless by construction:
// records.ts turns these rows back into the same records, and a record that could not come back
// exactly (a price text that is not a plain decimal or does not fit its DECIMAL, a time finer than a
// microsecond, a catalogue field of an unexpected type) is refused with a DecimalError naming market,
// seq and value; `rowsOrRefusal` (compaction/input.ts) leaves no row of it, and compaction sets it aside.

import { CATALOG_FIELDS } from '../../schema/market.js';
import type { Family, Ladder, Recorded } from '../../schema/observation.js';
import { DecimalError, encodeDecimal } from './decimal.js';
import type { ChunkedDoubles, ColumnSpec } from './columns.js';
import { scalesOf, type Dataset } from './datasets.js';

/** Column kinds held as raw doubles (NaN = null) while every value is a safe number. */
const NUMERIC = new Set<ColumnSpec['kind']>(['decimal', 'ts', 'int64', 'int32', 'f64']);

/** Rows per chunk of a numeric column (64 KiB of doubles). */
const CHUNK_SHIFT = 13;
const CHUNK_ROWS = 1 << CHUNK_SHIFT;
const CHUNK_MASK = CHUNK_ROWS - 1;

/**
 * Rows accumulated column by column (no object per row: compaction of deep books is dominated by
 * allocation otherwise). `set` fills the current row, `emit` appends it; values stay set until
 * `reset`, so the fields of a record are set once for all its level rows. Numeric columns live in
 * chunks of 8,192 doubles, NaN for null: pushing millions of values into plain arrays cost more than
 * writing the Parquet, and one array doubled as it grew wrote every value twice into fresh memory
 * (fresh pages are expensive on a VM; `grow` stood high in a compaction profile). Chunks are kept for the next file, and the batched writer hands each one to
 * the Parquet writer as it is, without a copy. A bigint (a decimal past 2^53) turns its column into a
 * plain array.
 */
export class RowSink {
  /** Per column: its chunks while numeric, else null (then `plain` holds it). */
  private readonly nums: (Float64Array[] | null)[];
  private readonly plain: (unknown[] | null)[];
  private readonly idx = new Map<string, number>();
  private readonly cur: unknown[];
  length = 0;

  constructor(readonly specs: readonly ColumnSpec[]) {
    this.nums = specs.map((s) => (NUMERIC.has(s.kind) ? [] : null));
    this.plain = specs.map((s) => (NUMERIC.has(s.kind) ? null : []));
    specs.forEach((s, i) => this.idx.set(s.name, i));
    this.cur = new Array<unknown>(specs.length).fill(null);
  }

  /** Every column's values so far: chunked doubles (NaN = null) or plain arrays, `length` long each. */
  get cols(): (readonly unknown[] | ChunkedDoubles)[] {
    return this.specs.map((_, i) => {
      const f = this.nums[i];
      return f !== null ? { chunks: f, length: this.length } : this.plainColumn(i);
    });
  }

  /** A plain column cut to `length` (after `clear` it may still hold the rows of the file before). */
  private plainColumn(i: number): unknown[] {
    const p = this.plain[i]!;
    if (p.length > this.length) p.length = this.length;
    return p;
  }

  reset(): void {
    this.cur.fill(null);
  }

  /** Sets a column of the current row (a column this dataset does not have is ignored). */
  set(name: string, v: unknown): void {
    const i = this.idx.get(name);
    if (i !== undefined) this.cur[i] = v === undefined ? null : v;
  }

  emit(): void {
    this.emitRow(this.cur);
  }

  /**
   * Appends one whole row given as values by column index (`row.length === specs.length`): also the
   * fast path of a writer that emits many rows sharing most values (book_snapshots).
   */
  emitRow(row: readonly unknown[]): void {
    const n = this.length;
    const c = n >>> CHUNK_SHIFT;
    const at = n & CHUNK_MASK;
    if (at === 0) this.ensureChunk(c);
    const nums = this.nums;
    for (let i = 0; i < row.length; i++) {
      const f = nums[i];
      const v = row[i];
      if (f !== null) {
        if (typeof v === 'number') {
          f[c][at] = v;
          continue;
        }
        if (v === null) {
          f[c][at] = NaN;
          continue;
        }
        this.toPlain(i, n); // a bigint (past 2^53): the column is plain from here on
      }
      const p = this.plain[i]!;
      if (n < p.length)
        p[n] = v; // a row of the file before, after `clear`: overwritten
      else p.push(v);
    }
    this.length = n + 1;
  }

  private ensureChunk(c: number): void {
    for (const f of this.nums) if (f !== null && f.length <= c) f.push(new Float64Array(CHUNK_ROWS));
  }

  private toPlain(i: number, n: number): void {
    const out = new Array<unknown>(n);
    for (let k = 0; k < n; k++) {
      const x = this.nums[i]![k >>> CHUNK_SHIFT][k & CHUNK_MASK];
      out[k] = Number.isNaN(x) ? null : x;
    }
    this.plain[i] = out;
    this.nums[i] = null;
  }

  /**
   * One column's values of rows [from, length): a copy as a Float64Array (NaN = null) for a numeric
   * column, the plain array (or its tail) otherwise.
   */
  column(name: string, from = 0): readonly unknown[] | Float64Array {
    const i = this.idx.get(name)!;
    const f = this.nums[i];
    if (f === null) return from === 0 ? this.plainColumn(i) : this.plain[i]!.slice(from, this.length);
    const out = new Float64Array(Math.max(0, this.length - from));
    for (let k = from; k < this.length; k++) out[k - from] = f[k >>> CHUNK_SHIFT][k & CHUNK_MASK];
    return out;
  }

  /** The index of a column in `specs`, or -1 (for writers that fill whole rows themselves). */
  indexOf(name: string): number {
    return this.idx.get(name) ?? -1;
  }

  /**
   * Drops every row (after they were written out). Numeric chunks stay for the next rows, and so do
   * the plain arrays, overwritten from the start: emptied, each file grew them again from nothing,
   * and their growth was a large share of a compaction's page faults (fresh memory each time).
   */
  clear(): void {
    this.length = 0;
  }

  /** Drops the rows from `n` on (a record refused halfway through its levels leaves none behind). */
  truncate(n: number): void {
    if (n < this.length) this.length = n;
  }
}

/** A stored record and whether its log frame was checkpoint-marked. */
export interface SourceRecord {
  readonly rec: Recorded;
  readonly checkpoint: boolean;
}

/** What rows need beyond the records: token id → outcome label (from the market's catalogue). */
export interface RowContext {
  readonly outcomes: ReadonlyMap<string, string>;
}

const where = (market: string, seq: number): string => `market ${market} seq ${seq}`;

/** A time in epoch ms that a TIMESTAMP(MICROS) holds exactly (whole microseconds). */
function exactTime(ms: number, market: string, seq: number, field: string): number {
  if (typeof ms !== 'number' || !Number.isFinite(ms) || Math.round(ms * 1000) / 1000 !== ms) {
    throw new DecimalError(
      `${where(market, seq)}: ${field} ${JSON.stringify(ms)} is not a whole number of microseconds; TIMESTAMP(MICROS) cannot hold it exactly`,
    );
  }
  return ms;
}

function base(o: RowSink, market: string, r: Recorded, checkpoint: boolean): void {
  o.reset();
  o.set('market_id', market);
  o.set('receive_time', exactTime(r.recv_ts, market, r.seq, 'receive_time'));
  o.set('source_time', r.source_ts === null ? null : exactTime(r.source_ts, market, r.seq, 'source_time'));
  o.set('seq', r.seq);
  o.set('origin', r.origin ?? null);
  o.set('import_id', r.import_id ?? null);
  o.set('checkpoint', checkpoint);
  o.set('recorder', r.recorder ?? null);
}

/** `<name>_decimals` of each decimal column, made once (not a new string to hash per value; records.ts reads with it too). */
const decimalsColumn = new Map<string, string>();
export const decimalsOf = (name: string): string => {
  let d = decimalsColumn.get(name);
  if (d === undefined) decimalsColumn.set(name, (d = `${name}_decimals`));
  return d;
};

/** Sets `<name>` and `<name>_decimals` from decimal text (null/undefined → nulls). */
function putDec(o: RowSink, name: string, text: string | undefined | null, scale: number, w: string): void {
  if (text === undefined || text === null) {
    o.set(name, null);
    o.set(decimalsOf(name), null);
    return;
  }
  const e = encodeDecimal(text, scale, w, name);
  o.set(name, e.unscaled);
  o.set(decimalsOf(name), e.form);
}

function bookRows(family: Family, market: string, sr: SourceRecord, ctx: RowContext, o: RowSink): void {
  const { rec: r, checkpoint } = sr;
  const sc = scalesOf(family);
  const w = where(market, r.seq);
  base(o, market, r, checkpoint);
  o.set('record_type', r.type);
  const n0 = o.length;
  const token = (t: string | null, outcome: string | null): void => {
    o.set('token_id', t);
    o.set('outcome', outcome ?? (t === null ? null : (ctx.outcomes.get(t) ?? null)));
  };
  const level = (side: string | null, price?: string, size?: string): void => {
    o.set('side', side);
    putDec(o, 'price', price, sc.price, w);
    putDec(o, 'size', size, sc.size, w);
    o.emit();
  };
  /** A full book's ladders: one row per level, or one price-null row for an empty side. */
  const ladder = (side: string, l: Ladder): void => {
    if (l.length === 0) level(side);
    for (const [p, s] of l) level(side, p, s);
  };
  switch (r.type) {
    case 'book':
      token(r.token_id, null);
      o.set('is_snapshot', true);
      o.set('units', r.units);
      o.set('version', r.version ?? null);
      o.set('hash', r.hash ?? null);
      ladder('bid', r.bids);
      ladder('ask', r.asks);
      break;
    case 'book_checkpoint':
      o.set('is_snapshot', true);
      o.set('units', r.units);
      for (const bk of r.books) {
        token(bk.token_id, null);
        ladder('bid', bk.bids);
        ladder('ask', bk.asks);
      }
      if (r.books.length === 0) level(null);
      break;
    case 'book_delta':
      token(r.token_id, null);
      o.set('is_snapshot', false);
      putDec(o, 'best_bid', r.best_bid, sc.price, w);
      putDec(o, 'best_ask', r.best_ask, sc.price, w);
      for (const ch of r.changes) level(ch.side, ch.price, ch.size);
      if (r.changes.length === 0) level(null);
      break;
    case 'tick_size':
      token(r.token_id, null);
      o.set('is_snapshot', false);
      level(null, r.new_tick_size, r.old_tick_size);
      break;
    case 'yesno_book':
      o.set('is_snapshot', true);
      o.set('units', r.units);
      o.set('poll_interval_ms', r.poll_interval_ms ?? null);
      token(null, 'yes');
      ladder('yes', r.yes);
      token(null, 'no');
      ladder('no', r.no);
      break;
    default:
      return;
  }
  if (o.length === n0) throw new Error(`${w}: a ${r.type} record produced no row`);
}

function tradeRow(family: Family, market: string, sr: SourceRecord, ctx: RowContext, o: RowSink): void {
  const r = sr.rec;
  if (r.type !== 'trade') return;
  const sc = scalesOf(family);
  const w = where(market, r.seq);
  base(o, market, r, sr.checkpoint);
  o.set('token_id', r.token_id);
  o.set('outcome', ctx.outcomes.get(r.token_id) ?? null);
  o.set('side', r.side ?? null);
  o.set('tx_hash', r.tx_hash ?? null);
  putDec(o, 'price', r.price, sc.price, w);
  putDec(o, 'size', r.size, sc.size, w);
  putDec(o, 'fee_rate_bps', r.fee_rate_bps, 8, w);
  o.emit();
}

function gapRow(market: string, sr: SourceRecord, o: RowSink): void {
  const r = sr.rec;
  if (r.type !== 'gap') return;
  base(o, market, r, sr.checkpoint);
  o.set('reason', r.reason);
  o.set('start_time', exactTime(r.start_ts, market, r.seq, 'start_time'));
  o.set('end_time', r.end_ts === null ? null : exactTime(r.end_ts, market, r.seq, 'end_time'));
  o.set('token_id', r.token_id ?? null);
  o.set('detail', r.detail ?? null);
  o.emit();
}

function metricRow(market: string, sr: SourceRecord, o: RowSink): void {
  const r = sr.rec;
  if (r.type !== 'metric') return;
  if (typeof r.value !== 'number')
    throw new DecimalError(`${where(market, r.seq)}: metric value ${JSON.stringify(r.value)} is not a number`);
  base(o, market, r, sr.checkpoint);
  o.set('metric', r.metric);
  o.set('outcome', r.outcome);
  o.set('token_id', r.token_id ?? null);
  o.set('value', r.value);
  o.emit();
}

export const TIME_FIELDS = new Set(['start_time', 'end_time', 'created_time', 'updated_time', 'resolved_time', 'open_time', 'close_time']);
export const NUMBER_FIELDS = new Set(['volume', 'liquidity', 'participants', 'start_price', 'end_price']);

function catalogRow(family: Family, market: string, sr: SourceRecord, o: RowSink): void {
  const r = sr.rec;
  if (r.type !== 'catalog') return;
  const w = where(market, r.seq);
  const m = r.market as unknown as Record<string, unknown>;
  const known = new Set<string>(CATALOG_FIELDS[family]);
  const row: Record<string, unknown> = { event: r.event, changed: [...r.changed], fields: Object.keys(m) };
  const bad = (k: string, why: string): never => {
    throw new DecimalError(`${w}: catalogue field ${k} = ${JSON.stringify(m[k])} ${why}`);
  };
  for (const [k, v] of Object.entries(m)) {
    if (!known.has(k)) bad(k, `is not a ${family} catalogue field`);
    if (k === 'family') {
      if (v !== family) bad(k, `is not ${family}`);
      continue;
    }
    if (k === 'market_id') {
      if (v !== market) bad(k, `differs from the log's market ${market}`);
      continue;
    }
    if (k === 'native') {
      row.native = JSON.stringify(v ?? null);
      continue;
    }
    if (k === 'outcomes') {
      const list = v as { label: string; token_id: string }[] | null;
      if (
        list !== null &&
        (!Array.isArray(list) ||
          list.some((o) => typeof o?.label !== 'string' || typeof o?.token_id !== 'string' || Object.keys(o).join() !== 'label,token_id'))
      ) {
        bad(k, 'is not a list of {label, token_id}');
      }
      row.outcome_labels = list?.map((o) => o.label) ?? null;
      row.outcome_token_ids = list?.map((o) => o.token_id) ?? null;
      continue;
    }
    if (k === 'chain') {
      const ch = v as { chain_id: number; exchange_contract: string } | null;
      if (
        ch !== null &&
        (typeof ch !== 'object' ||
          Object.keys(ch).join() !== 'chain_id,exchange_contract' ||
          !Number.isSafeInteger(ch.chain_id) ||
          typeof ch.exchange_contract !== 'string')
      ) {
        bad(k, 'is not {chain_id, exchange_contract}');
      }
      // A null chain is told apart from an absent one by `fields`; chain_id/exchange_contract null.
      row.chain_id = ch?.chain_id ?? null;
      row.exchange_contract = ch?.exchange_contract ?? null;
      continue;
    }
    if (v === null) {
      row[k] = null;
      continue;
    }
    if (TIME_FIELDS.has(k)) row[k] = exactTime(v as number, market, r.seq, k);
    else if (NUMBER_FIELDS.has(k)) {
      if (typeof v !== 'number' || (k === 'participants' && !Number.isSafeInteger(v))) bad(k, 'is not a number of the column type');
      row[k] = v;
    } else if (typeof v !== 'string') bad(k, 'is not text');
    else row[k] = v;
  }
  base(o, market, r, sr.checkpoint);
  for (const [k, v] of Object.entries(row)) o.set(k, v);
  o.emit();
}

/** The rows of one record in `dataset` (none when the record belongs to another dataset). */
export function recordRows(family: Family, dataset: Dataset, market: string, sr: SourceRecord, ctx: RowContext, out: RowSink): void {
  switch (dataset) {
    case 'book_changes':
      bookRows(family, market, sr, ctx, out);
      break;
    case 'trades':
      tradeRow(family, market, sr, ctx, out);
      break;
    case 'gaps':
      gapRow(market, sr, out);
      break;
    case 'metrics':
      metricRow(market, sr, out);
      break;
    case 'catalog':
      catalogRow(family, market, sr, out);
      break;
  }
}

/** Record types each books-stream dataset holds (a record of any other type cannot be stored). */
export const BOOK_CHANGE_TYPES = new Set(['book', 'book_delta', 'book_checkpoint', 'tick_size', 'yesno_book']);
