// Parquet files in and out of memory: columns made Arrow data (columns.ts), written by parquet-wasm
// with ZSTD and chunk statistics, and read back either as a footer (row counts, key/value metadata)
// or one row group at a time (file-ranges.ts serves the reader's byte ranges).

import { RecordBatch, Schema, Struct, Table, makeData, tableFromIPC, tableToIPC, type TypeMap } from 'apache-arrow';
// Under Node the package's "node" export condition resolves to its CommonJS build, whose named
// exports Node's ESM loader detects; the wasm binary is loaded synchronously beside it.
import {
  Compression,
  EnabledStatistics,
  Encoding,
  ParquetFile,
  Table as WasmTable,
  WriterPropertiesBuilder,
  readParquet,
  writeParquet,
  type WriterProperties,
} from 'parquet-wasm';
import { arrowSchema, columnData, type ColumnSpec, type ColumnValues } from './columns.js';
import { FileRanges } from './file-ranges.js';
import { RemoteRanges, remoteFile } from './remote-files.js';

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
    else if (s.plain) props = props.setColumnDictionaryEnabled(s.name, false);
  }
  return props.build();
}

/** Parquet bytes held in memory → the Arrow IPC stream of all their rows, by the decoder files are read with. */
export function parquetToIPC(bytes: Uint8Array): Uint8Array {
  return readParquet(bytes, { batchSize: 1 << 16 }).intoIPCStream();
}

export interface Footer {
  readonly rows: number;
  readonly rowGroups: number;
  readonly rowGroupRows: number[];
  readonly metadata: Map<string, string>;
}

/** An open Parquet file: footer parsed once, row groups decoded on demand. */
export class ParquetFileReader {
  private constructor(
    private readonly file: ParquetFile,
    readonly footer: Footer,
    private readonly ranges: FileRanges | RemoteRanges,
  ) {}

  static async open(path: string): Promise<ParquetFileReader> {
    // A part file of a mounted archive is read by ranges from the bucket, any other from the disk.
    const remote = remoteFile(path);
    const ranges = remote ? new RemoteRanges(remote) : await FileRanges.open(path);
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
  async readRowGroup(index: number, columns?: string[]): Promise<Table<TypeMap>> {
    const t = await this.file.read({ rowGroups: [index], columns, batchSize: 1 << 16 });
    return tableFromIPC(t.intoIPCStream());
  }

  /**
   * Decodes rows [offset, offset + limit) of one row group: the reader skips the rest (whole pages,
   * where the page index allows), so a small range costs little of a large group.
   */
  async readRows(index: number, offset: number, limit: number, columns?: string[]): Promise<Table<TypeMap>> {
    const t = await this.file.read({ rowGroups: [index], columns, offset, limit, batchSize: 1 << 16 });
    return tableFromIPC(t.intoIPCStream());
  }

  /**
   * Rows [offset, offset + limit) of one row group as an Arrow IPC stream (schema, record batches,
   * end marker) as the decoder writes it: no JavaScript object per row or column is made.
   */
  async readRowsIPC(index: number, offset: number, limit: number, columns?: string[]): Promise<Uint8Array> {
    const t = await this.file.read({ rowGroups: [index], columns, offset, limit, batchSize: 1 << 16 });
    return t.intoIPCStream();
  }

  /** Decodes the whole file. */
  async readAll(columns?: string[]): Promise<Table<TypeMap>> {
    const t = await this.file.read({ columns, batchSize: 1 << 16 });
    return tableFromIPC(t.intoIPCStream());
  }

  close(): void {
    this.file.free();
    void this.ranges.close().catch(() => undefined);
  }
}
