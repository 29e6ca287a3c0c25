// A part file written batch by batch. `encodeParquet` hands the whole file to the WebAssembly writer
// as one Arrow IPC stream: for a day of book_snapshots that is a buffer the size of the whole file
// in JavaScript and as much again in WebAssembly memory, all of it fresh memory, whose page faults
// `npm run bench -- parquet` counts. Here the
// same rows go to parquet-wasm's streaming writer in batches of 8,192 rows: the IPC bytes of one
// batch at a time, the writer holding at most a row group, and the file is the same (same
// schema, row groups, encodings, statistics and metadata; the compaction tests read it back).

import { tableToIPC, type Schema } from 'apache-arrow';
import { Table as WasmTable, transformParquetStream, type RecordBatch as WasmBatch } from 'parquet-wasm';
import { arrowTable, encodeParquet, writerProperties, type WriteOptions } from './file.js';
import { arrowSchema, type ChunkedDoubles, type ColumnSpec, type ColumnValues } from './columns.js';

/** Rows per batch: the row sink's chunk size, so a numeric column's batch is one of its chunks. */
export const BATCH_ROWS = 8192;

/** Rows [lo, hi) of a column, without copying numbers where a view will do. */
function sliceColumn(v: ColumnValues, lo: number, hi: number): ColumnValues {
  if (v instanceof Float64Array) return v.subarray(lo, hi);
  if (Array.isArray(v)) return (v as unknown[]).slice(lo, hi) as ColumnValues;
  const c = v as ChunkedDoubles;
  const size = c.chunks[0]?.length ?? BATCH_ROWS;
  if (lo % size === 0 && hi - lo <= size) return c.chunks[lo / size].subarray(0, hi - lo);
  const out = new Float64Array(hi - lo);
  for (let i = lo; i < hi; i++) out[i - lo] = c.chunks[Math.floor(i / size)][i % size];
  return out;
}

/** One batch of rows as Arrow IPC bytes. */
function ipcOf(schema: Schema, specs: readonly ColumnSpec[], columns: readonly ColumnValues[], lo: number, hi: number): Uint8Array {
  return tableToIPC(
    arrowTable(
      schema,
      specs,
      columns.map((c) => sliceColumn(c, lo, hi)),
      hi - lo,
    ),
    'stream',
  );
}

/**
 * Columns → Parquet bytes, as `encodeParquet` writes them. Small inputs (one batch or fewer) take
 * `encodeParquet` itself: the streaming writer needs at least one batch to learn the schema from.
 */
export async function encodeParquetBatched(
  specs: readonly ColumnSpec[],
  columns: readonly ColumnValues[],
  opts: WriteOptions,
): Promise<Uint8Array> {
  const n = columns[0]?.length ?? 0;
  if (n <= BATCH_ROWS) return encodeParquet(specs, columns, opts);
  const schema = arrowSchema(specs);
  let next = 0;
  const batches = new ReadableStream<WasmBatch>({
    pull(ctrl) {
      if (next >= n) return ctrl.close();
      const hi = Math.min(n, next + BATCH_ROWS);
      const table = WasmTable.fromIPCStream(ipcOf(schema, specs, columns, next, hi));
      for (const b of table.recordBatches()) ctrl.enqueue(b);
      table.free();
      next = hi;
    },
  });
  const out = (await transformParquetStream(batches, writerProperties(specs, opts))) as ReadableStream<Uint8Array>;
  const parts: Uint8Array[] = [];
  let length = 0;
  for await (const p of out as unknown as AsyncIterable<Uint8Array>) {
    parts.push(p);
    length += p.length;
  }
  const file = new Uint8Array(length);
  let at = 0;
  for (const p of parts) {
    file.set(p, at);
    at += p.length;
  }
  return file;
}
