// One market's rows of one dataset over a time range, as one Arrow IPC stream (`GET /v3/datasets/rows`):
// the rows DuckDB selects from the partitions with `WHERE market_id = … AND receive_time` in the
// range, without downloading a day. Compacted days are cut from their part files by the decoder
// itself: the footer's segments name the row groups, the receive-time column the exact rows, and the
// decoder writes those rows as IPC with no JavaScript object per row. Days still in logs are built by
// compaction's own code (rows.ts) and go through the same Parquet writer and decoder, so a range has
// the same schema and values before compaction, after it and after its logs are deleted (a record
// compaction sets aside in its quarantine file is left out of both).
//
// The pieces are spliced into one stream: every piece is a whole IPC stream from the decoder
// (schema message, record batches, end marker); the schema is sent once, then each piece's batches,
// then one end marker. A piece whose schema message differs from the dataset's is refused (it would
// be a different table), which no file written by this schema version can cause.

import type { Family } from '../../schema/observation.js';
import { DAY_MS, dayStartMs, utcDay } from '../../schema/time.js';
import { openLogReader } from '../read/reader.js';
import type { LogKey } from '../types.js';
import { readLogDay, rowsOrRefusal } from './input.js';
import { int64At, int64Words, type ColumnValues } from '../parquet/columns.js';
import { encodeParquet, parquetToIPC, type ParquetFileReader } from '../parquet/file.js';
import type { FileSegment } from '../parquet/partition-files.js';
import type { ParquetStore } from '../parquet/reader.js';
import { RowSink, type RowContext } from '../parquet/rows.js';
import { columnsOf, streamOfDataset, type RowDataset } from '../parquet/datasets.js';
import { contextOf } from './stream.js';

export interface RowsRequest {
  readonly family: Family;
  readonly dataset: RowDataset;
  /** The dataset's `market_id` (the ticker for yes/no). */
  readonly market: string;
  /** Receive time, epoch ms: [start, end). */
  readonly start: number;
  readonly end: number;
}

/** Rows built from a log are written out in pieces of at most this many (memory stays flat over a day). */
const LOG_PIECE_ROWS = 65_536;

/** The IPC end-of-stream marker: continuation, zero length. */
export const IPC_END = Uint8Array.of(0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0);

/** Bytes of the schema message at the head of an IPC stream (continuation, length, flatbuffer). */
function schemaMessageBytes(ipc: Uint8Array): number {
  const dv = new DataView(ipc.buffer, ipc.byteOffset, ipc.byteLength);
  if (ipc.byteLength < 8 || dv.getUint32(0, true) !== 0xffffffff)
    throw new Error('dataset rows: the decoder wrote an IPC stream without a schema message');
  return 8 + dv.getInt32(4, true);
}

/** The schema message of each (family, dataset): what an empty table of its columns decodes to. */
const schemas = new Map<string, Uint8Array>();

export function schemaMessage(family: Family, dataset: RowDataset): Uint8Array {
  const k = `${family}/${dataset}`;
  let m = schemas.get(k);
  if (!m) {
    const specs = columnsOf(family, dataset);
    const ipc = parquetToIPC(
      encodeParquet(
        specs,
        specs.map(() => []),
        { rowGroupRows: 1024, metadata: new Map() },
      ),
    );
    m = ipc.slice(0, schemaMessageBytes(ipc));
    schemas.set(k, m);
  }
  return m;
}

/** A decoded piece without its schema message and end marker, after checking the schema is the dataset's. */
function batchesOf(ipc: Uint8Array, schema: Uint8Array): Uint8Array {
  const head = schemaMessageBytes(ipc);
  if (head !== schema.byteLength || Buffer.compare(ipc.subarray(0, head), schema) !== 0) {
    throw new Error("dataset rows: a piece decoded with a schema other than its dataset's");
  }
  const end =
    ipc.byteLength >= head + 8 && Buffer.compare(ipc.subarray(ipc.byteLength - 8), IPC_END) === 0 ? ipc.byteLength - 8 : ipc.byteLength;
  return ipc.subarray(head, end);
}

/** Row ranges [a, b) of a segment whose receive time (µs) lies in [startUs, endUs). */
async function timeRuns(reader: ParquetFileReader, s: FileSegment, startUs: number, endUs: number): Promise<[number, number][]> {
  const t = await reader.readRows(s.rg, s.start, s.rows, ['receive_time']);
  const runs: [number, number][] = [];
  let row = s.start;
  let open = -1;
  for (const d of t.getChild('receive_time')!.data) {
    const w = int64Words(d); // words, not a BigInt per value: no allocation per row
    for (let k = 0; k < d.length; k++, row++) {
      const us = int64At(w, k);
      const inside = us >= startUs && us < endUs;
      if (inside && open < 0) open = row;
      else if (!inside && open >= 0) {
        runs.push([open, row]);
        open = -1;
      }
    }
  }
  if (open >= 0) runs.push([open, row]);
  return runs;
}

/**
 * The IPC stream of a request, a piece at a time: the schema message first, then record batches in
 * seq order (day by day), then the end marker. Pieces are made as the consumer asks for them.
 */
export async function* datasetRowsIPC(dataDir: string, store: ParquetStore, req: RowsRequest): AsyncGenerator<Uint8Array> {
  const { family, dataset, market, start, end } = req;
  const schema = schemaMessage(family, dataset);
  yield schema;
  const key: LogKey = { family, stream: streamOfDataset(dataset), market };
  let ctx: RowContext | null = null;
  for (let day = utcDay(start); day <= utcDay(end - 1); day = utcDay(dayStartMs(day)! + DAY_MS)) {
    const files = await store.datasetFiles(family, dataset, day, market);
    if (files) {
      for (const s of files.segments) {
        if (s.maxRecv < start || s.minRecv >= end) continue;
        const { reader } = files.files.get(s.file)!;
        const runs =
          s.minRecv >= start && s.maxRecv < end
            ? [[s.start, s.start + s.rows] as [number, number]]
            : await timeRuns(reader, s, start * 1000, end * 1000);
        for (const [a, b] of runs) yield batchesOf(await reader.readRowsIPC(s.rg, a, b - a), schema);
      }
      continue;
    }
    // Not compacted: the day's log from the first record at or after the range's start in it, up to
    // the first at or after its end (a log's receive times only grow, as every read assumes).
    const dayStart = dayStartMs(day)!;
    const from = Math.max(start, dayStart);
    const to = Math.min(end, dayStart + DAY_MS);
    const pos = await openLogReader(dataDir, key).seekTime(from);
    if (!pos || pos.day !== day) continue;
    ctx ??= await contextOf(dataDir, family, market);
    const specs = columnsOf(family, dataset);
    const sink = new RowSink(specs);
    const piece = (): Uint8Array => {
      const ipc = parquetToIPC(
        encodeParquet(specs, sink.cols as readonly ColumnValues[], { rowGroupRows: LOG_PIECE_ROWS, metadata: new Map() }),
      );
      sink.clear();
      return batchesOf(ipc, schema);
    };
    for await (const sr of readLogDay(dataDir, key, day, pos.offset)) {
      if (sr.rec.recv_ts >= to) break;
      if (sr.rec.recv_ts < from) continue;
      // A record compaction sets aside (a value its columns cannot hold) has no row here either.
      rowsOrRefusal(family, [dataset], [sink], market, sr, ctx);
      if (sink.length >= LOG_PIECE_ROWS) yield piece();
    }
    if (sink.length > 0) yield piece();
  }
  yield IPC_END;
}
