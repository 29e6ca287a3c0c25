// The storage layer's public surface: what recorders write through and what the read side, the
// compactor and the stream read through. Storage knows record types (src/schema) but nothing about
// venues or HTTP. Implementations live beside this file; everything else imports from ./index.js.

import type { Family, Observation, Recorded, StreamName } from '../schema/observation.js';

/** Identifies one logical log: all UTC-day files of one (family, stream, market). */
export interface LogKey {
  readonly family: Family;
  readonly stream: StreamName;
  /** Market id (the ticker for yes/no). Any text: storage encodes it into a safe file name. */
  readonly market: string;
}

/**
 * A stable position in a logical log: the byte offset of a frame in one day file, with the seq of
 * the record found there. Cursors carry positions, so following one never repeats or skips a record
 * even while the writer appends.
 */
export interface Position {
  readonly day: string; // YYYY-MM-DD
  readonly offset: number;
  readonly seq: number;
}

export interface ReadItem {
  readonly rec: Recorded;
  /** Where this record starts. */
  readonly pos: Position;
}

export interface AppendOptions {
  /** Mark this record as a full-book checkpoint in the sparse index (as-of reads start there). */
  readonly checkpoint?: boolean;
}

export interface AppendManyOptions {
  /** Checkpoint marks: one flag for every record of the group, or one per record (same order). */
  readonly checkpoint?: boolean | readonly boolean[];
}

export interface WriterOptions {
  /**
   * The seq of the first record of a log that holds none yet (default 1): a merged day's log starts
   * where its day's seq range does, so seq rises across merged days built in any order.
   */
  readonly firstSeq?: number;
  /** Group commit: fsync at most this many ms after the first unsynced append (default 50). */
  readonly fsyncIntervalMs?: number;
  /** ...or as soon as this many records are unsynced (default 1000). */
  readonly fsyncMaxRecords?: number;
  /** Bytes appended but not yet acknowledged beyond which `backpressure` is true (default 8 MiB). */
  readonly highWaterMarkBytes?: number;
  /**
   * A sparse index entry at least every this many bytes of log (default 4096). Keep the default
   * outside tests: `verify` compares each index with a rebuild that uses the default.
   */
  readonly indexEveryBytes?: number;
  /**
   * Called after each group commit is fsynced with the log bytes and records it covered
   * (diagnostics: the storage bench replays this cadence for its raw-write baseline).
   */
  readonly onCommit?: (bytes: number, records: number) => void;
}

/**
 * The single writer of one logical log (a lock file refuses a second live writer with LockedError).
 * Records go to the day file of their `recv_ts` (UTC). `seq` is assigned here: strictly increasing,
 * continuing across day files and crashes. `recv_ts` must not go backwards; an older record is
 * rejected with StorageError (the caller decides what to do with it).
 */
export interface LogWriter {
  readonly key: LogKey;
  /**
   * Resolves once the record is fsynced ("acknowledged"): it then survives kill -9. The bytes are
   * encoded during the call; the resolved Recorded is a shallow copy of `obs` (plus seq) made at
   * acknowledgement, so do not change `obs` before then.
   */
  append(obs: Observation, opts?: AppendOptions): Promise<Recorded>;
  /**
   * Appends a group in order with consecutive seqs: the same as `append` of each record in turn,
   * with one promise for the group, resolved (in order, like `append`) once all are fsynced. The
   * group is all or nothing: when any record is refused (older recv_ts, unencodable), none of it
   * is written, seq does not move, and the promise rejects with StorageError naming the record.
   */
  appendMany(obs: readonly Observation[], opts?: AppendManyOptions): Promise<Recorded[]>;
  /**
   * `append` / `appendMany` for callers that do not need the Recorded back: the same durability
   * (resolves once fsynced, rejects the same way), but the writer keeps no reference to the
   * records after encoding them, which spares the garbage collector on hot recorder paths.
   */
  write(obs: Observation, opts?: AppendOptions): Promise<void>;
  writeMany(obs: readonly Observation[], opts?: AppendManyOptions): Promise<void>;
  /** True while more than the high-water mark is waiting: the caller should await `drained()`. */
  readonly backpressure: boolean;
  drained(): Promise<void>;
  /** The newest record (after recovery on open), or null for an empty log. */
  lastRecord(): Recorded | null;
  /** Forces an fsync of everything appended so far. */
  flush(): Promise<void>;
  /** Flushes, fsyncs, releases the lock. */
  close(): Promise<void>;
}

export interface ReadOptions {
  /** Stop before the first record with recv_ts ≥ this (exclusive end). */
  readonly endTime?: number;
  /** Stop after this many records. */
  readonly limit?: number;
}

/**
 * Where a replay starts: the log's first record, the first record received at or after `time`
 * (epoch ms), the first with seq ≥ `seq`, or a position (its seq wins when the frame moved, e.g.
 * to a compacted partition).
 */
export type ReplayFrom = 'start' | { readonly time: number } | { readonly seq: number } | { readonly pos: Position };

export interface ReplayOptions {
  /** Stop before the first record with recv_ts ≥ this (exclusive end), warm-up records included. */
  readonly until?: number;
  /**
   * Start at the newest checkpoint before the start record (or the log's first record when there is
   * none) and yield the records in between flagged `warmup`: what a book needs to be whole at the start.
   */
  readonly warmup?: boolean;
}

/**
 * Records of a forward pass handed out together (LogView.records), decoded when taken: a chunk
 * holds the bytes of its records, so a long chunk costs no heap until its records are used. A chunk
 * is valid until the chunk after the next one is requested (its bytes are then read over): take
 * its records before asking for more.
 */
export interface RecordChunk {
  /** Number of records, at least 1. */
  readonly length: number;
  /** Receive time of record i in µs, without decoding it. */
  recvUs(i: number): number;
  /** Record i, decoded by this call: take each record once. */
  record(i: number): Recorded;
}

export interface RecordsOptions {
  /** Stop before the first record with recv_ts ≥ this (exclusive end). */
  readonly until?: number;
}

export interface ReplayItem extends ReadItem {
  /** Before the requested start: replayed only to rebuild state (see ReplayOptions.warmup). */
  readonly warmup: boolean;
}

/**
 * One logical log as it stands when the view was made: its days (log files and compacted
 * partitions) are listed once, and every call below works on that plan. Each call (and each day a
 * pass enters) sees the day file as it is then, so appends to the open day show up in later calls;
 * a day file created after the view is not seen (make a new view). One view serves one request (a
 * page, an as-of read). A pass holds at most one file handle and one chunk of decoded records
 * (≤ 256 KiB of log, or one Parquet row group from the shared bounded cache), however long the
 * history, and releases the handle when the consumer stops early (break or return()).
 */
export interface LogView {
  /** The planned days, ascending. */
  readonly days: readonly string[];
  /** Position of the first record at or after `from` (O(log n) through the sparse index), or null. */
  seek(from: ReplayFrom): Promise<Position | null>;
  /** Records from `from` forward in (receive time, seq) order; nothing when no record is at or after `from`. */
  replay(from: ReplayFrom, opts?: ReplayOptions): AsyncGenerator<ReplayItem>;
  /**
   * The records of `replay(from)` (no warm-up) in chunks, without positions: for one pass that
   * handles records synchronously (`/v3/replay`), an await per chunk instead of per record. The next
   * chunk is read while the consumer handles the current one; see RecordChunk for how long one stays valid.
   */
  records(from: ReplayFrom, opts?: RecordsOptions): AsyncGenerator<RecordChunk>;
  /** Records strictly before `before` (or from the end), newest first, down to `startTime` (inclusive). */
  backward(before: Position | 'end', opts?: { readonly startTime?: number }): AsyncGenerator<ReadItem>;
  first(): Promise<ReadItem | null>;
  latest(): Promise<ReadItem | null>;
  /** The newest checkpoint-marked record with recv_ts ≤ t, or null. */
  checkpointAtOrBefore(t: number): Promise<ReadItem | null>;
}

/**
 * A reader of one logical log, safe to use in another process than the writer: it sees only
 * complete, checksummed frames. Damaged or missing indexes are rebuilt from the log on demand.
 */
/** The first and newest record of a log (receive time ms, seq): what coverage lists per dataset. */
export interface LogSpan {
  readonly first: { readonly recv_ts: number; readonly seq: number };
  readonly last: { readonly recv_ts: number; readonly seq: number };
}

/** What a caller already knows, so `span()` does not list it again (a coverage page, per log). */
export interface SpanHint {
  /** The log's day files, ascending (a listing of its folder). */
  readonly logDays?: readonly string[];
  /** The stream's compacted dates, ascending (taken once for many logs: `parquetDates`). */
  readonly parquetDates?: readonly string[];
  /** The newest day file's size as the caller's stamp just found it (-1: gone): not stat'ed again. */
  readonly newest?: { readonly day: string; readonly size: number };
}

export interface LogReader {
  readonly key: LogKey;
  /**
   * First and newest record without opening the day files of compacted days (their partition's
   * manifest knows both ends); only a day served from its log that no manifest vouches for is read.
   * Absent on readers with no such summary (the generic first()/latest() then answer).
   */
  span?(hint?: SpanHint): Promise<LogSpan | null>;
  /** Day files present, ascending. */
  days(): Promise<string[]>;
  /** The log planned once, for a request that makes several calls (see LogView). */
  view(): Promise<LogView>;
  /** One pass: plans the days once, then `LogView.replay`. */
  replay(from: ReplayFrom, opts?: ReplayOptions): AsyncIterable<ReplayItem>;
  /** Position of the first record with recv_ts ≥ t, or null when there is none (yet). */
  seekTime(t: number): Promise<Position | null>;
  /** Position of the first record with seq ≥ s, or null. */
  seekSeq(s: number): Promise<Position | null>;
  /** Records from `from` (inclusive) forward, across day files. */
  read(from: Position | 'start', opts?: ReadOptions): AsyncIterable<ReadItem>;
  /** The records of `read(from, { endTime })` a chunk at a time (see LogView.records). */
  readChunks(from: Position | 'start', opts?: { readonly endTime?: number }): AsyncIterable<RecordChunk>;
  /** Records strictly before `before` (or from the end when 'end'), newest first. */
  readBackward(before: Position | 'end', opts?: { readonly startTime?: number; readonly limit?: number }): AsyncIterable<ReadItem>;
  /** The newest record, or null. */
  latest(): Promise<ReadItem | null>;
  /** Where the newest record starts, without reading it (cheap "anything new?" checks), or null. */
  latestPosition(): Promise<Position | null>;
  /** The oldest record, or null. */
  first(): Promise<ReadItem | null>;
  /** The newest checkpoint-marked record with recv_ts ≤ t, or null. */
  checkpointAtOrBefore(t: number): Promise<ReadItem | null>;
  /**
   * Follows the growing tail: yields every record from `from` on, then waits for appends
   * (file-change notification as a hint plus a short poll) until `signal` aborts.
   */
  follow(from: Position | 'start' | 'end', signal: AbortSignal): AsyncIterable<ReadItem>;
}

/** Result of checking one file (verify). */
export interface FileCheck {
  readonly file: string;
  readonly ok: boolean;
  /** Where damage begins (byte offset), when not ok. */
  readonly damageOffset?: number;
  readonly problem?: string;
  readonly repaired?: boolean;
}
