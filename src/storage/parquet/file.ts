// Parquet files in and out of memory: column vectors built straight into Arrow buffers (fast, no
// per-value builder), written by parquet-wasm with ZSTD and chunk statistics, and read back either as
// a footer (row counts, key/value metadata) or one row group at a time (file-ranges.ts serves the
// reader's byte ranges).

import {
  Bool, Decimal, Field, Float64, Int32, Int64, List, Schema, Struct, Table, TimestampMicrosecond, Utf8, makeData, tableFromIPC, tableToIPC,
  RecordBatch, type Data, type DataType,
} from 'apache-arrow';
// Under Node the package's "node" export condition resolves to its CommonJS build, whose named
// exports Node's ESM loader detects; the wasm binary is loaded synchronously beside it.
import {
  Compression, EnabledStatistics, Encoding, ParquetFile, Table as WasmTable, WriterPropertiesBuilder, writeParquet, type WriterProperties,
} from 'parquet-wasm';
import { DECIMAL_PRECISION } from './decimal.js';
import { FileRanges } from './file-ranges.js';

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
  /** One sentence for the README's column table. */
  readonly doc: string;
}

type Cell = string | number | bigint | boolean | null | readonly string[] | readonly number[];

function arrowType(kind: ColumnKind, scale = 0): DataType {
  switch (kind) {
    case 'int32': return new Int32();
    // 64-bit: DECIMAL(18, s) fits, and Parquet stores it as INT64 either way; half the bytes of a
    // Decimal128 through IPC and into the writer (files written as Decimal128 still read, see records.ts).
    case 'decimal': return new Decimal(scale, DECIMAL_PRECISION, 64);
    case 'utf8': return new Utf8();
    case 'ts': return new TimestampMicrosecond('UTC');
    case 'int64': return new Int64();
    case 'f64': return new Float64();
    case 'bool': return new Bool();
    case 'list_utf8': return new List(new Field('element', new Utf8(), false));
    case 'list_f64': return new List(new Field('element', new Float64(), false));
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
  const offsets = new Int32Array(values.length + 1);
  let total = 0;
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (v !== null && v !== undefined) total += Buffer.byteLength(v, 'utf8');
    offsets[i + 1] = total;
  }
  const bytes = Buffer.allocUnsafe(total);
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (v !== null && v !== undefined && v.length) bytes.write(v, offsets[i], 'utf8');
  }
  const { bitmap, nulls } = validity(values);
  return makeData({ type: new Utf8(), length: values.length, nullCount: nulls, nullBitmap: nulls ? bitmap : null, valueOffsets: offsets, data: bytes });
}

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
    const flat: string[] = new Array(n);
    for (let i = 0; i < values.length; i++) {
      const v = values[i];
      if (v) for (let k = 0; k < v.length; k++) flat[offsets[i] + k] = v[k] as string;
    }
    child = utf8Data(flat);
  }
  const { bitmap, nulls } = validity(values as Cell[]);
  return makeData({ type: arrowType(kind) as List, length: values.length, nullCount: nulls, nullBitmap: nulls ? bitmap : null, valueOffsets: offsets, child });
}

/** One column as Arrow data (its buffers built once, validity from NaN or null). */
export function columnData(spec: ColumnSpec, values: ColumnValues): Data {
  const n = values.length;
  const { bitmap, nulls } = validity(values);
  const nullBitmap = nulls ? bitmap : null;
  if (!spec.nullable && nulls) throw new TypeError(`column ${spec.name} is not nullable but has ${nulls} nulls`);
  switch (spec.kind) {
    case 'utf8': return utf8Data(values as unknown as (string | null)[]);
    case 'list_utf8': case 'list_f64': return listData(spec.kind, values as unknown as (string[] | number[] | null)[]);
    case 'f64': {
      const data = new Float64Array(n);
      // NaN (null) stays, masked by the bitmap.
      if (isDoubles(values)) eachRun(values, (run, base) => data.set(run, base));
      else for (let i = 0; i < n; i++) data[i] = (values[i] as number | null) ?? 0;
      return makeData({ type: new Float64(), length: n, nullCount: nulls, nullBitmap, data });
    }
    case 'int32': {
      const data = new Int32Array(n);
      if (isDoubles(values)) eachRun(values, (run, base) => data.set(run, base)); // NaN becomes 0
      else for (let i = 0; i < n; i++) data[i] = (values[i] as number | null) ?? 0;
      return makeData({ type: new Int32(), length: n, nullCount: nulls, nullBitmap, data });
    }
    case 'decimal': {
      // Two little-endian 32-bit words per value (Decimal64); values are unsigned and < 10^18.
      const data = new Uint32Array(n * 2);
      if (isDoubles(values)) {
        eachRun(values, (run, base) => {
          for (let k = 0; k < run.length; k++) {
            const v = run[k];
            if (v !== v) continue;
            const i = base + k;
            data[i * 2] = v % 4294967296;
            data[i * 2 + 1] = Math.floor(v / 4294967296);
          }
        });
        return makeData({ type: arrowType('decimal', spec.scale) as Decimal, length: n, nullCount: nulls, nullBitmap, data });
      }
      for (let i = 0; i < n; i++) {
        const v = values[i] as number | bigint | null;
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
    case 'int64': case 'ts': {
      const data = new BigInt64Array(n);
      // Receive times may carry sub-millisecond digits: round to whole microseconds.
      const scale = spec.kind === 'ts' ? 1000 : 1;
      if (isDoubles(values)) {
        eachRun(values, (run, base) => {
          for (let k = 0; k < run.length; k++) data[base + k] = run[k] !== run[k] ? 0n : BigInt(Math.round(run[k] * scale));
        });
      } else {
        for (let i = 0; i < n; i++) {
          const v = values[i] as number | null;
          data[i] = v === null || v !== v ? 0n : BigInt(Math.round(v * scale));
        }
      }
      return spec.kind === 'ts'
        ? makeData({ type: new TimestampMicrosecond('UTC'), length: n, nullCount: nulls, nullBitmap, data })
        : makeData({ type: new Int64(), length: n, nullCount: nulls, nullBitmap, data });
    }
  }
}

export interface WriteOptions {
  /** Rows per row group: the unit of the read side's sparse index and decode cache. */
  readonly rowGroupRows: number;
  /** Footer key/value metadata (schema version, row-group index). */
  readonly metadata: ReadonlyMap<string, string>;
}

/**
 * Columns (one value array per spec, equal lengths) → Parquet bytes: ZSTD, page statistics (min/max
 * per page and row group), dictionary for text and decimals, DELTA_BINARY_PACKED for times and seq.
 */
export function encodeParquet(specs: readonly ColumnSpec[], columns: readonly ColumnValues[], opts: WriteOptions): Uint8Array {
  const schema = arrowSchema(specs);
  const n = columns[0]?.length ?? 0;
  const wasmTable = WasmTable.fromIPCStream(tableToIPC(arrowTable(schema, specs, columns, n), 'stream'));
  return writeParquet(wasmTable, writerProperties(specs, opts));
}

/** An Arrow table of one record batch from columns of `n` values each. */
export function arrowTable(schema: Schema, specs: readonly ColumnSpec[], columns: readonly ColumnValues[], n: number): Table {
  const children = specs.map((s, i) => columnData(s, columns[i]));
  return new Table(schema, [new RecordBatch(schema, makeData({ type: new Struct(schema.fields), length: n, nullCount: 0, children }))]);
}

/** The writer settings every dataset file is written with. */
export function writerProperties(specs: readonly ColumnSpec[], opts: WriteOptions): WriterProperties {
  let props = new WriterPropertiesBuilder()
    .setCompression(Compression.ZSTD)
    .setStatisticsEnabled(EnabledStatistics.Page)
    .setMaxRowGroupSize(opts.rowGroupRows)
    .setCreatedBy('pmtape')
    .setKeyValueMetadata(new Map(opts.metadata));
  for (const s of specs) {
    if (s.delta) props = props.setColumnDictionaryEnabled(s.name, false).setColumnEncoding(s.name, Encoding.DELTA_BINARY_PACKED);
  }
  return props.build();
}

export interface Footer {
  readonly rows: number;
  readonly rowGroups: number;
  readonly rowGroupRows: number[];
  readonly metadata: Map<string, string>;
}

/** An open Parquet file: footer parsed once, row groups decoded on demand. */
export class ParquetFileReader {
  private constructor(private readonly file: ParquetFile, readonly footer: Footer, private readonly ranges: FileRanges) {}

  static async open(path: string): Promise<ParquetFileReader> {
    const ranges = await FileRanges.open(path);
    let file: ParquetFile;
    try {
      file = await ParquetFile.fromFile(ranges as unknown as Blob);
    } catch (e) {
      await ranges.close();
      throw e;
    }
    const md = file.metadata();
    const fmd = md.fileMetadata();
    const rowGroupRows: number[] = [];
    for (let i = 0; i < md.numRowGroups(); i++) rowGroupRows.push(md.rowGroup(i).numRows());
    const metadata = new Map<string, string>();
    for (const [k, v] of fmd.keyValueMetadata()) if (k !== 'ARROW:schema') metadata.set(String(k), String(v));
    return new ParquetFileReader(file, { rows: fmd.numRows(), rowGroups: md.numRowGroups(), rowGroupRows, metadata }, ranges);
  }

  /** Decodes one row group (optionally only some columns) into an Arrow JS table. */
  async readRowGroup(index: number, columns?: string[]): Promise<Table> {
    const t = await this.file.read({ rowGroups: [index], columns, batchSize: 1 << 16 });
    return tableFromIPC(t.intoIPCStream());
  }

  /**
   * Decodes rows [offset, offset + limit) of one row group: the reader skips the rest (whole pages,
   * where the page index allows), so a small range costs little of a large group.
   */
  async readRows(index: number, offset: number, limit: number, columns?: string[]): Promise<Table> {
    const t = await this.file.read({ rowGroups: [index], columns, offset, limit, batchSize: 1 << 16 });
    return tableFromIPC(t.intoIPCStream());
  }

  /** Decodes the whole file. */
  async readAll(columns?: string[]): Promise<Table> {
    const t = await this.file.read({ columns, batchSize: 1 << 16 });
    return tableFromIPC(t.intoIPCStream());
  }

  close(): void {
    this.file.free();
    void this.ranges.close().catch(() => undefined);
  }
}
