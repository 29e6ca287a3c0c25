// Rows of the schema-version-2 datasets → the stored records they came from, exactly (the inverse
// of rows.ts). The read side serves compacted days through this, so every API answer is the same
// before compaction, after it and after the logs are deleted.

import type { Data, Table, TypeMap, Vector } from 'apache-arrow';
import type { Family, Level, Recorded } from '../../schema/observation.js';
import { decodeDecimal, type Unscaled } from './decimal.js';
import type { ColumnSpec } from './columns.js';
import { CATALOG_FIELDS } from '../../schema/market.js';
import { decimalsOf } from './rows.js';
import { columnsOf, scalesOf, type Dataset } from './datasets.js';

/** One decoded row group: a plain JS array per column (nulls as null), times in epoch ms. */
export type Columns = Record<string, unknown[]>;

function valid(v: Vector, i: number): boolean {
  return v.nullCount === 0 || v.isValid(i);
}

const utf8 = new TextDecoder();

/**
 * Decodes rows [from, to) of every column of `specs` present in `t` into plain arrays (index 0 is
 * row `from`). The read side asks for one market's rows of a seq range. Values are read from each
 * chunk's buffers, not through Vector.get (a chunk lookup per value); a text equal to the previous
 * row's bytes reuses its string (market, token, outcome and side come in long runs).
 */
export function decodeColumns(t: Table, specs: readonly ColumnSpec[], from = 0, to = t.numRows, only?: Sparse): Columns {
  const out: Columns = {};
  const n = Math.max(0, to - from);
  const columns = t as Table<TypeMap>; // any table: each column is read by its ColumnSpec, not its static type
  for (const s of specs) {
    const v = columns.getChild(s.name);
    if (!v) continue;
    const a = new Array<unknown>(n);
    const rows = only && !only.every.has(s.name) ? only.rows : null;
    if (s.kind === 'list_utf8' || s.kind === 'list_f64') {
      // Schema-version-1 columns only: rare, kept on the vector API.
      for (let r = from; r < to; r++) a[r - from] = valid(v, r) ? Array.from(v.get(r) as Vector) : null;
      out[s.name] = a;
      continue;
    }
    let base = 0; // row of `t` where chunk `d` starts
    for (const d of v.data) {
      const lo = Math.max(from, base),
        hi = Math.min(to, base + d.length);
      if (hi > lo) decodeChunk(s, v, d, base, lo, hi, a, from, rows);
      base += d.length;
    }
    out[s.name] = a;
  }
  return out;
}

/**
 * Rows [lo, hi) of one chunk `d` (starting at row `base` of the table) into `a` (index 0 = row
 * `from`), or only those of them listed in `rows` (ascending table rows; the others stay holes).
 * One loop per kind, and validity read from the bitmap: Arrow's per-value getters (`getValid`,
 * `nullCount`) were a third of a cold read.
 */
function decodeChunk(
  s: ColumnSpec,
  v: Vector,
  d: Data,
  base: number,
  lo: number,
  hi: number,
  a: unknown[],
  from: number,
  rows: Int32Array | null,
): void {
  const bm = d.nullCount > 0 ? d.nullBitmap : null;
  const o = d.offset - base; // row r of the table is slot r + o of the chunk's buffers
  const ok = (at: number): boolean => bm === null || ((bm[at >> 3] >> (at & 7)) & 1) === 1;
  // The q-th row to decode: every row of [lo, hi), or the listed ones in it.
  let qlo = lo,
    qhi = hi;
  if (rows !== null) {
    qlo = lowerBound32(rows, lo);
    qhi = lowerBound32(rows, hi);
  }
  const row = rows === null ? (q: number): number => q : (q: number): number => rows[q];
  switch (s.kind) {
    case 'ts':
    case 'int64': {
      const x = d.values as BigInt64Array;
      const div = s.kind === 'ts' ? 1000 : 1;
      for (let q = qlo; q < qhi; q++) {
        const r = row(q);
        a[r - from] = ok(r + o) ? Number(x[r + o]) / div : null;
      }
      return;
    }
    case 'int32':
    case 'f64': {
      const x = d.values as Int32Array | Float64Array;
      for (let q = qlo; q < qhi; q++) {
        const r = row(q);
        a[r - from] = ok(r + o) ? x[r + o] : null;
      }
      return;
    }
    case 'bool': {
      const x = d.values as Uint8Array;
      for (let q = qlo; q < qhi; q++) {
        const r = row(q);
        a[r - from] = ok(r + o) ? ((x[(r + o) >> 3] >> ((r + o) & 7)) & 1) === 1 : null;
      }
      return;
    }
    case 'decimal': {
      // 32-bit words per decimal: 2 (Decimal64, written since) or 4 (Decimal128, older files).
      const stride = (d.type as { bitWidth?: number }).bitWidth! / 32;
      const w = d.values as Uint32Array;
      for (let q = qlo; q < qhi; q++) {
        const r = row(q);
        const at = r + o;
        if (!ok(at)) {
          a[r - from] = null;
          continue;
        }
        const wlo = w[at * stride],
          whi = w[at * stride + 1];
        const x = whi * 4294967296 + wlo;
        a[r - from] = x <= Number.MAX_SAFE_INTEGER ? x : (BigInt(whi) << 32n) | BigInt(wlo);
      }
      return;
    }
    case 'utf8': {
      if (!d.valueOffsets) {
        // a dictionary-encoded chunk: through its vector
        for (let q = qlo; q < qhi; q++) {
          const r = row(q);
          a[r - from] = ok(r + o) ? v.get(r) : null;
        }
        return;
      }
      // Int32 offsets (Utf8) or BigInt64 (LargeUtf8): Number() reads either.
      const offs = d.valueOffsets as ArrayLike<number | bigint>,
        bytes = d.values as Uint8Array;
      let prevStart = -1,
        prevEnd = -1,
        prevText = '';
      for (let q = qlo; q < qhi; q++) {
        const r = row(q);
        const at = r + o;
        if (!ok(at)) {
          a[r - from] = null;
          continue;
        }
        const st = Number(offs[at]),
          en = Number(offs[at + 1]);
        if (prevStart < 0 || en - st !== prevEnd - prevStart || !sameBytes(bytes, st, prevStart, en - st)) {
          prevText = utf8.decode(bytes.subarray(st, en));
        }
        prevStart = st;
        prevEnd = en;
        a[r - from] = prevText;
      }
      return;
    }
    default:
      throw new Error(`column ${s.name}: kind ${s.kind} is not read here`);
  }
}

/** First index of ascending `a` whose value is ≥ x. */
function lowerBound32(a: Int32Array, x: number): number {
  let lo = 0,
    hi = a.length;
  while (lo < hi) {
    const m = (lo + hi) >>> 1;
    if (a[m] < x) lo = m + 1;
    else hi = m;
  }
  return lo;
}

function sameBytes(b: Uint8Array, x: number, y: number, len: number): boolean {
  for (let k = 0; k < len; k++) if (b[x + k] !== b[y + k]) return false;
  return true;
}

const text = (c: Columns, name: string, i: number, scale: number): string | undefined => {
  const v = c[name]?.[i];
  return v === null || v === undefined ? undefined : decodeDecimal(v as Unscaled, scale, c[decimalsOf(name)][i] as number);
};

/** Base fields of the record on row `i`, with only the optional keys the record had. */
function base(c: Columns, i: number): Record<string, unknown> {
  const o: Record<string, unknown> = { recv_ts: c.receive_time[i], source_ts: c.source_time[i] ?? null };
  if (c.origin[i] !== null) o.origin = c.origin[i];
  if (c.import_id[i] !== null) o.import_id = c.import_id[i];
  const rec = c.recorder?.[i]; // absent in files written before the column
  if (rec !== null && rec !== undefined) o.recorder = rec;
  return o;
}

export interface RecordRow {
  readonly rec: Recorded;
  readonly seq: number;
  readonly recvMs: number;
  readonly checkpoint: boolean;
}

/** The records of `book_changes` rows [from, to) (whole records: rows of one seq are contiguous). */
function bookRecords(family: Family, c: Columns, from: number, to: number, out: RecordRow[]): void {
  const sc = scalesOf(family);
  // The columns every level reads, looked up once (not by name per value).
  const seqs = c.seq,
    sides = c.side,
    prices = c.price,
    priceForms = c.price_decimals,
    sizes = c.size,
    sizeForms = c.size_decimals;
  const lvl = (k: number): Level => [
    decodeDecimal(prices[k] as Unscaled, sc.price, priceForms[k] as number),
    decodeDecimal(sizes[k] as Unscaled, sc.size, sizeForms[k] as number),
  ];
  const ladder = (side: string, lo: number, hi: number): Level[] => {
    const l: Level[] = [];
    for (let k = lo; k < hi; k++) if (sides[k] === side && prices[k] !== null) l.push(lvl(k));
    return l;
  };
  let i = from;
  while (i < to) {
    const seq = seqs[i] as number;
    let j = i + 1;
    while (j < to && seqs[j] === seq) j++;
    const type = c.record_type[i] as string;
    const b = base(c, i);
    let rec: Record<string, unknown>;
    if (type === 'book') {
      rec = { type, ...b, token_id: c.token_id[i], units: c.units[i], bids: ladder('bid', i, j), asks: ladder('ask', i, j) };
      if (c.version[i] !== null) rec.version = c.version[i];
      if (c.hash[i] !== null) rec.hash = c.hash[i];
    } else if (type === 'book_checkpoint') {
      const books: { token_id: string; bids: Level[]; asks: Level[] }[] = [];
      for (let k = i; k < j;) {
        const tok = c.token_id[k] as string | null;
        let e = k + 1;
        while (e < j && c.token_id[e] === tok) e++;
        if (tok !== null) books.push({ token_id: tok, bids: ladder('bid', k, e), asks: ladder('ask', k, e) });
        k = e;
      }
      rec = { type, ...b, units: c.units[i], books };
    } else if (type === 'book_delta') {
      const changes: { side: 'bid' | 'ask'; price: string; size: string }[] = [];
      for (let k = i; k < j; k++) {
        if (sides[k] === null) continue;
        const [price, size] = lvl(k); // once: each is a decimal text to build
        changes.push({ side: sides[k] as 'bid' | 'ask', price, size });
      }
      rec = { type, ...b, token_id: c.token_id[i], changes };
      const bb = text(c, 'best_bid', i, sc.price);
      const ba = text(c, 'best_ask', i, sc.price);
      if (bb !== undefined) rec.best_bid = bb;
      if (ba !== undefined) rec.best_ask = ba;
    } else if (type === 'tick_size') {
      rec = {
        type,
        ...b,
        token_id: c.token_id[i],
        old_tick_size: text(c, 'size', i, sc.size),
        new_tick_size: text(c, 'price', i, sc.price),
      };
    } else if (type === 'yesno_book') {
      rec = { type, ...b, units: c.units[i], yes: ladder('yes', i, j), no: ladder('no', i, j) };
      if (c.poll_interval_ms[i] !== null) rec.poll_interval_ms = c.poll_interval_ms[i];
    } else {
      throw new Error(`book_changes row of market ${String(c.market_id[i])} seq ${seq} has an unknown record_type ${type}`);
    }
    rec.seq = seq;
    out.push({ rec: rec as unknown as Recorded, seq, recvMs: c.receive_time[i] as number, checkpoint: c.checkpoint[i] === true });
    i = j;
  }
}

function catalogMarket(family: Family, c: Columns, i: number): Record<string, unknown> {
  const m: Record<string, unknown> = {};
  for (const k of c.fields[i] as string[]) {
    if (!(CATALOG_FIELDS[family] as readonly string[]).includes(k))
      throw new Error(`catalog row seq ${String(c.seq[i])} lists an unknown field ${k}`);
    if (k === 'family') m[k] = family;
    else if (k === 'market_id') m[k] = c.market_id[i];
    else if (k === 'native') m[k] = JSON.parse(c.native[i] as string);
    else if (k === 'outcomes') {
      const labels = c.outcome_labels[i] as string[] | null;
      m[k] = labels === null ? null : labels.map((label, n) => ({ label, token_id: (c.outcome_token_ids[i] as string[])[n] }));
    } else if (k === 'chain') m[k] = c.chain_id[i] === null ? null : { chain_id: c.chain_id[i], exchange_contract: c.exchange_contract[i] };
    else m[k] = c[k][i] ?? null;
  }
  return m;
}

/** The records of rows [from, to) of one v2 dataset, in row (= seq) order. */
export function recordsOf(family: Family, dataset: Dataset, c: Columns, from: number, to: number): RecordRow[] {
  const out: RecordRow[] = [];
  if (dataset === 'book_changes') {
    bookRecords(family, c, from, to, out);
    return out;
  }
  const sc = scalesOf(family);
  for (let i = from; i < to; i++) {
    const b = base(c, i);
    let rec: Record<string, unknown>;
    if (dataset === 'trades') {
      rec = { type: 'trade', ...b, token_id: c.token_id[i], price: text(c, 'price', i, sc.price) };
      const size = text(c, 'size', i, sc.size);
      const fee = text(c, 'fee_rate_bps', i, 8);
      if (size !== undefined) rec.size = size;
      if (c.side[i] !== null) rec.side = c.side[i];
      if (fee !== undefined) rec.fee_rate_bps = fee;
      if (c.tx_hash[i] !== null) rec.tx_hash = c.tx_hash[i];
    } else if (dataset === 'gaps') {
      rec = { type: 'gap', ...b, reason: c.reason[i], start_ts: c.start_time[i], end_ts: c.end_time[i] ?? null };
      if (c.token_id[i] !== null) rec.token_id = c.token_id[i];
      if (c.detail[i] !== null) rec.detail = c.detail[i];
    } else if (dataset === 'metrics') {
      rec = { type: 'metric', ...b, metric: c.metric[i], outcome: c.outcome[i], value: c.value[i] };
      if (c.token_id[i] !== null) rec.token_id = c.token_id[i];
    } else {
      rec = { type: 'catalog', ...b, event: c.event[i], changed: c.changed[i], market: catalogMarket(family, c, i) };
    }
    const seq = c.seq[i] as number;
    rec.seq = seq;
    out.push({ rec: rec as unknown as Recorded, seq, recvMs: c.receive_time[i] as number, checkpoint: c.checkpoint[i] === true });
  }
  return out;
}

/**
 * Which rows of which columns to decode: the columns named in `every` on every row, the others on
 * the listed rows only (ascending table rows).
 */
export interface Sparse {
  readonly rows: Int32Array;
  readonly every: ReadonlySet<string>;
}

/**
 * `book_changes` columns that bookRecords reads on every row of a record; it reads the others on the
 * record's first row only, and `outcome` and `is_snapshot` (for researchers: the record type and
 * the rows say the same) not at all. A record has about ten rows on deep books, so decoding the
 * record-level columns on first rows only took most of the column decoding off a cold read.
 */
const BOOK_ROW_COLUMNS: ReadonlySet<string> = new Set(['seq', 'token_id', 'side', 'price', 'price_decimals', 'size', 'size_decimals']);
const BOOK_UNREAD = new Set(['outcome', 'is_snapshot']);
/** Per family: `book_changes`' seq column, and the other columns read. */
const bookSpecs = new Map<Family, { readonly seq: readonly ColumnSpec[]; readonly rest: readonly ColumnSpec[] }>();

/** Decodes rows [from, to) of a v2 dataset's table into the columns recordsOf reads. */
export function decodeDataset(family: Family, dataset: Dataset, t: Table, from = 0, to = t.numRows): Columns {
  if (dataset !== 'book_changes') return decodeColumns(t, columnsOf(family, dataset), from, to);
  let specs = bookSpecs.get(family);
  if (!specs) {
    const all = columnsOf(family, dataset);
    specs = { seq: all.filter((c) => c.name === 'seq'), rest: all.filter((c) => c.name !== 'seq' && !BOOK_UNREAD.has(c.name)) };
    bookSpecs.set(family, specs);
  }
  const { seq } = decodeColumns(t, specs.seq, from, to);
  const firsts: number[] = [];
  for (let i = 0; i < seq.length; i++) if (i === 0 || seq[i] !== seq[i - 1]) firsts.push(i + from);
  const cols = decodeColumns(t, specs.rest, from, to, { rows: Int32Array.from(firsts), every: BOOK_ROW_COLUMNS });
  cols.seq = seq;
  return cols;
}
