// Compaction's columns as Arrow data: the column kinds of the datasets, and each column's buffers
// built in one pass from what the row sink gathered (plain values, or raw doubles with NaN for null)
// without a per-value builder. file.ts writes the Arrow table these make as Parquet.

import {
  Bool,
  Decimal,
  Field,
  Float64,
  Int32,
  Int64,
  List,
  Schema,
  TimestampMicrosecond,
  Utf8,
  makeData,
  type Data,
  type DataType,
} from 'apache-arrow';
import { DECIMAL_PRECISION } from './decimal.js';

/**
 * Column kinds the datasets use. `ts` is TIMESTAMP(MICROS, UTC) filled from epoch ms; `decimal` is
 * DECIMAL(18, scale) filled from unscaled integers (numbers or bigints, see decimal.ts).
 */
export type ColumnKind = 'utf8' | 'ts' | 'int64' | 'int32' | 'f64' | 'bool' | 'decimal' | 'list_utf8' | 'list_f64';

export interface ColumnSpec {
  readonly name: string;
  readonly kind: ColumnKind;
  readonly nullable: boolean;
  /** Digits after the point of a `decimal` column. */
  readonly scale?: number;
  /** Monotone-ish integers (times, seq): DELTA_BINARY_PACKED instead of a dictionary. */
  readonly delta?: boolean;
  /**
   * No dictionary: values that repeat in runs rather than across the file (a book's levels second
   * after second) are smaller and quicker to write as PLAIN pages under ZSTD than with a dictionary
   * page per row group.
   */
  readonly plain?: boolean;
  /** One sentence for the README's column table. */
  readonly doc: string;
}

type Cell = string | number | bigint | boolean | null | readonly string[] | readonly number[];

function arrowType(kind: ColumnKind, scale = 0): DataType {
  switch (kind) {
    case 'int32':
      return new Int32();
    // 64-bit: DECIMAL(18, s) fits, and Parquet stores it as INT64 either way; half the bytes of a
    // Decimal128 through IPC and into the writer (files written as Decimal128 still read, see records.ts).
    case 'decimal':
      return new Decimal(scale, DECIMAL_PRECISION, 64);
    case 'utf8':
      return new Utf8();
    case 'ts':
      return new TimestampMicrosecond('UTC');
    case 'int64':
      return new Int64();
    case 'f64':
      return new Float64();
    case 'bool':
      return new Bool();
    case 'list_utf8':
      return new List(new Field('element', new Utf8(), false));
    case 'list_f64':
      return new List(new Field('element', new Float64(), false));
  }
}

export function arrowSchema(cols: readonly ColumnSpec[]): Schema {
  return new Schema(cols.map((c) => new Field(c.name, arrowType(c.kind, c.scale), c.nullable)));
}

/**
 * Raw doubles (NaN = null) kept in fixed-size chunks, as compaction's row sink gathers them: no
 * doubling copy as a column grows, and the chunks are reused for the next file.
 */
export interface ChunkedDoubles {
  readonly chunks: readonly Float64Array[];
  readonly length: number;
}

/** A column as compaction hands it over: plain values, or raw doubles with NaN for null. */
export type ColumnValues = readonly Cell[] | Float64Array | ChunkedDoubles;

type Doubles = Float64Array | ChunkedDoubles;
const isDoubles = (v: ColumnValues): v is Doubles => v instanceof Float64Array || !Array.isArray(v);

/** Calls `fn` with each run of doubles and the row it starts at (one run for a Float64Array). */
function eachRun(v: Doubles, fn: (run: Float64Array, base: number) => void): void {
  if (v instanceof Float64Array) return fn(v, 0);
  let base = 0;
  for (const c of v.chunks) {
    if (base >= v.length) break;
    const run = c.length <= v.length - base ? c : c.subarray(0, v.length - base);
    fn(run, base);
    base += run.length;
  }
}

function validity(values: ColumnValues): { bitmap: Uint8Array; nulls: number } {
  const bitmap = new Uint8Array(Math.ceil(values.length / 8));
  let nulls = 0;
  if (isDoubles(values)) {
    eachRun(values, (run, base) => {
      for (let k = 0; k < run.length; k++) {
        const i = base + k;
        if (run[k] !== run[k]) nulls++;
        else bitmap[i >> 3] |= 1 << (i & 7);
      }
    });
    return { bitmap, nulls };
  }
  for (let i = 0; i < values.length; i++) {
    if (values[i] === null || values[i] === undefined) nulls++;
    else bitmap[i >> 3] |= 1 << (i & 7);
  }
  return { bitmap, nulls };
}

function utf8Data(values: readonly (string | null)[]): Data<Utf8> {
  // One pass for lengths, one buffer, in-place writes: no per-value Uint8Array (GC dominated before).
  // Text columns repeat (a market's id on every row, a token's id on every level, `bid`/`ask`): a
  // value equal to the one before copies its bytes, and short ASCII is copied by hand, since a
  // `Buffer.write` call costs more than the few bytes it writes.
  const n = values.length;
  const offsets = new Int32Array(n + 1);
  let total = 0;
  let prev: string | null = null;
  let prevLen = 0;
  for (let i = 0; i < n; i++) {
    const v = values[i];
    if (v !== null && v !== undefined) {
      if (v !== prev) {
        prev = v;
        prevLen = Buffer.byteLength(v, 'utf8');
      }
      total += prevLen;
    }
    offsets[i + 1] = total;
  }
  const bytes = Buffer.allocUnsafe(total);
  prev = null;
  let prevAt = 0;
  for (let i = 0; i < n; i++) {
    const v = values[i];
    if (v === null || v === undefined) continue;
    const at = offsets[i];
    const len = offsets[i + 1] - at;
    if (len === 0) continue;
    if (v === prev && len <= SHORT_TEXT) {
      for (let k = 0; k < len; k++) bytes[at + k] = bytes[prevAt + k];
    } else if (v === prev) {
      bytes.copyWithin(at, prevAt, prevAt + len);
    } else if (len === v.length && len <= SHORT_TEXT) {
      // As many bytes as UTF-16 units: every character is ASCII (anything else takes 2-3 bytes).
      for (let k = 0; k < len; k++) bytes[at + k] = v.charCodeAt(k);
    } else {
      bytes.write(v, at, 'utf8');
    }
    prev = v;
    prevAt = at;
  }
  const { bitmap, nulls } = validity(values);
  return makeData({ type: new Utf8(), length: n, nullCount: nulls, nullBitmap: nulls ? bitmap : null, valueOffsets: offsets, data: bytes });
}

/** Text up to this many bytes is copied byte by byte rather than through a Buffer call. */
const SHORT_TEXT = 96;

function listData(kind: 'list_utf8' | 'list_f64', values: readonly (readonly (string | number)[] | null)[]): Data {
  const offsets = new Int32Array(values.length + 1);
  let n = 0;
  for (let i = 0; i < values.length; i++) {
    n += values[i]?.length ?? 0;
    offsets[i + 1] = n;
  }
  let child: Data;
  if (kind === 'list_f64') {
    const flat = new Float64Array(n);
    for (let i = 0; i < values.length; i++) {
      const v = values[i];
      if (v) for (let k = 0; k < v.length; k++) flat[offsets[i] + k] = v[k] as number;
    }
    child = makeData({ type: new Float64(), length: n, nullCount: 0, data: flat });
  } else {
    const flat = new Array<string>(n);
    for (let i = 0; i < values.length; i++) {
      const v = values[i];
      if (v) for (let k = 0; k < v.length; k++) flat[offsets[i] + k] = v[k] as string;
    }
    child = utf8Data(flat);
  }
  const { bitmap, nulls } = validity(values as Cell[]);
  return makeData({
    type: arrowType(kind) as List,
    length: values.length,
    nullCount: nulls,
    nullBitmap: nulls ? bitmap : null,
    valueOffsets: offsets,
    child,
  });
}

/** `data` unless its column is not nullable and it has nulls. */
function nonNull<T extends { readonly nullCount: number }>(spec: ColumnSpec, data: T): T {
  if (!spec.nullable && data.nullCount) throw new TypeError(`column ${spec.name} is not nullable but has ${data.nullCount} nulls`);
  return data;
}

/**
 * A decimal column gathered as raw doubles (NaN = null; unscaled, unsigned, below 2^53), validity
 * and the two little-endian 32-bit words of each Decimal64 in one pass: book_snapshots alone has
 * a hundred such columns.
 */
function decimalFromDoubles(spec: ColumnSpec, values: Doubles): Data {
  const n = values.length;
  const data = new Uint32Array(n * 2);
  const bitmap = new Uint8Array(Math.ceil(n / 8));
  let nulls = 0;
  eachRun(values, (run, base) => {
    // Validity bits gathered a byte at a time and OR-ed in, so a run may start and end anywhere.
    let bits = 0;
    for (let k = 0; k < run.length; k++) {
      const v = run[k];
      const i = base + k;
      if (v === v) {
        bits |= 1 << (i & 7);
        if (v < 4294967296)
          data[i * 2] = v; // the high word stays 0
        else {
          const hi = Math.floor(v / 4294967296);
          data[i * 2] = v - hi * 4294967296;
          data[i * 2 + 1] = hi;
        }
      } else nulls++;
      if ((i & 7) === 7) {
        bitmap[i >> 3] |= bits;
        bits = 0;
      }
    }
    const last = base + run.length - 1;
    if (run.length > 0 && (last & 7) !== 7) bitmap[last >> 3] |= bits;
  });
  return makeData({
    type: arrowType('decimal', spec.scale) as Decimal,
    length: n,
    nullCount: nulls,
    nullBitmap: nulls ? bitmap : null,
    data,
  });
}

/** One column as Arrow data (its buffers built once, validity from NaN or null). */
export function columnData(spec: ColumnSpec, values: ColumnValues): Data {
  if (spec.kind === 'decimal' && isDoubles(values)) return nonNull(spec, decimalFromDoubles(spec, values));
  if (spec.kind === 'utf8') return nonNull(spec, utf8Data(values as unknown as (string | null)[]));
  if (spec.kind === 'list_utf8' || spec.kind === 'list_f64')
    return nonNull(spec, listData(spec.kind, values as unknown as (string[] | number[] | null)[]));
  const n = values.length;
  const { bitmap, nulls } = validity(values);
  const nullBitmap = nulls ? bitmap : null;
  nonNull(spec, { nullCount: nulls });
  switch (spec.kind) {
    case 'f64': {
      const data = new Float64Array(n);
      // NaN (null) stays, masked by the bitmap.
      if (isDoubles(values)) eachRun(values, (run, base) => data.set(run, base));
      else for (let i = 0; i < n; i++) data[i] = (values[i] as number | null) ?? 0;
      return makeData({ type: new Float64(), length: n, nullCount: nulls, nullBitmap, data });
    }
    case 'int32': {
      const data = new Int32Array(n);
      if (isDoubles(values))
        eachRun(values, (run, base) => data.set(run, base)); // NaN becomes 0
      else for (let i = 0; i < n; i++) data[i] = (values[i] as number | null) ?? 0;
      return makeData({ type: new Int32(), length: n, nullCount: nulls, nullBitmap, data });
    }
    case 'decimal': {
      // Plain values (a column holding a bigint past 2^53; doubles took decimalFromDoubles): two
      // little-endian 32-bit words per value (Decimal64); values are unsigned and < 10^18.
      const data = new Uint32Array(n * 2);
      const cells = values as readonly Cell[];
      for (let i = 0; i < n; i++) {
        const v = cells[i] as number | bigint | null;
        if (v === null || v !== v) continue; // null, or NaN in a typed column
        if (typeof v === 'number') {
          data[i * 2] = v % 4294967296;
          data[i * 2 + 1] = Math.floor(v / 4294967296);
        } else {
          data[i * 2] = Number(v & 0xffffffffn);
          data[i * 2 + 1] = Number((v >> 32n) & 0xffffffffn);
        }
      }
      return makeData({ type: arrowType('decimal', spec.scale) as Decimal, length: n, nullCount: nulls, nullBitmap, data });
    }
    case 'bool': {
      const data = new Uint8Array(Math.ceil(n / 8));
      const bools = values as readonly Cell[]; // never gathered as doubles
      for (let i = 0; i < n; i++) if (bools[i]) data[i >> 3] |= 1 << (i & 7);
      return makeData({ type: new Bool(), length: n, nullCount: nulls, nullBitmap, data });
    }
    case 'int64':
    case 'ts': {
      // Two 32-bit words per value written as numbers, not a BigInt each (millions of them were a
      // good part of compaction's garbage): exact for every safe integer, negative ones included.
      const buf = new ArrayBuffer(n * 8);
      const lo = new Uint32Array(buf);
      const hi = new Int32Array(buf);
      // Receive times may carry sub-millisecond digits: round to whole microseconds.
      const scale = spec.kind === 'ts' ? 1000 : 1;
      const put = (i: number, x: number): void => {
        if (x !== x) return; // null (the validity bitmap says so): 0
        const v = Math.round(x * scale);
        if (!Number.isSafeInteger(v)) throw new RangeError(`column ${spec.name}: ${x} is not a safe integer`);
        const h = Math.floor(v / 4294967296);
        lo[i * 2] = v - h * 4294967296;
        hi[i * 2 + 1] = h;
      };
      if (isDoubles(values))
        eachRun(values, (run, base) => {
          for (let k = 0; k < run.length; k++) put(base + k, run[k]);
        });
      else for (let i = 0; i < n; i++) put(i, (values[i] as number | null) ?? NaN);
      const data = new BigInt64Array(buf);
      return spec.kind === 'ts'
        ? makeData({ type: new TimestampMicrosecond('UTC'), length: n, nullCount: nulls, nullBitmap, data })
        : makeData({ type: new Int64(), length: n, nullCount: nulls, nullBitmap, data });
    }
  }
}

/**
 * The raw little-endian 32-bit words (two per value) of one INT64 or TIMESTAMP chunk of a decoded
 * table: read as numbers with `int64At` instead of a BigInt per value through Arrow's getters.
 */
export function int64Words(d: Data): Uint32Array {
  const v = d.values as BigInt64Array;
  return new Uint32Array(v.buffer, v.byteOffset + d.offset * 8, d.length * 2);
}

/** Value `i` of `int64Words` (non-negative and below 2^53: seqs, times after 1970). */
export const int64At = (w: Uint32Array, i: number): number => w[2 * i + 1] * 4294967296 + w[2 * i];
