// The single writer of one logical log (all day files of one family/stream/market). Appends are
// framed and indexed synchronously (so seq order is call order), then written and fsynced in
// groups: one writev + one fdatasync per batch (day-files.ts), and every promise of the batch
// resolves after it. A batch the disk refuses is cut off the files (rollback.ts).

import { DISK_ERROR_CODES, DiskError, StorageError } from '../../errors.js';
import type { Observation, Recorded } from '../../schema/observation.js';
import { DAY_MS, utcDay } from '../../schema/time.js';
import { ARENA_BYTES, MIN_ARENA_BYTES, Runs, WriteArena, newBatch, recordOf, settle, type Batch } from './batch.js';
import { DayFiles } from './day-files.js';
import { encodeFrameAt, msToUs } from './frame.js';
import { FILE_HEADER_BYTES } from './file-header.js';
import { rollBackSegments } from './rollback.js';
import { DEFAULT_INDEX_EVERY_BYTES, ENTRY_BYTES, ENTRY_CHECKPOINT, encodeEntryAt } from './time-index.js';
import type { AppendManyOptions, AppendOptions, LogKey, LogWriter, WriterOptions } from '../types.js';

const asStorageError = (e: unknown, prefix = ''): StorageError =>
  e instanceof StorageError && prefix === '' ? e : new StorageError(prefix + (e as Error).message);

/** Where a writer continues: the newest day file holding records, as recovery left it. */
export interface WriterTail {
  readonly day: string | null;
  readonly size: number;
  readonly indexOffset: number;
  /** Size of that day file's index (recovery leaves it matching the log). */
  readonly indexBytes: number;
  readonly last: Recorded | null;
  readonly lastSeq: number;
  readonly lastRecvUs: number;
}

/** The writer's logical tail at one instant: restored when a batch the disk refused is undone. */
interface TailState {
  readonly day: string | null;
  readonly size: number;
  readonly indexOffset: number;
  readonly idxBytes: number;
  readonly lastSeq: number;
  readonly lastRecvUs: number;
  readonly last: Recorded | null;
  readonly lastObs: Observation | null;
}

export class AppendLog implements LogWriter {
  private readonly intervalMs: number;
  private readonly maxRecords: number;
  private readonly highWater: number;
  private readonly everyBytes: number;
  private readonly onCommit: WriterOptions['onCommit'];
  // Logical tail: where the next frame goes once everything queued is written.
  private tailDay: string | null;
  private tailSize: number;
  private tailIndexOffset: number;
  /** Index file size of the tail day once everything queued is written. */
  private tailIdxBytes: number;
  /** The tail as of the last acknowledged batch (what a refused batch rolls back to). */
  private durable: TailState;
  private lastSeq: number;
  private lastRecvUs: number;
  /** The newest record, built lazily from `lastObs` (no copy per append). */
  private last: Recorded | null;
  private lastObs: Observation | null = null;
  /** The open day file (log and index handles). */
  private readonly files: DayFiles;
  private batch = newBatch();
  private flushing = false;
  private timer: NodeJS.Timeout | null = null;
  private unacked = 0;
  private failed: Error | null = null;
  private closed = false;
  private drainWaiters: Array<() => void> = [];
  /** The UTC day of recent records: utcDay() formats a Date, so it runs only when a day changes. */
  private dayStartMs = -Infinity;
  private dayName = '';
  private readonly arena = new WriteArena(MIN_ARENA_BYTES, ARENA_BYTES);
  private readonly idxArena = new WriteArena(1024, 64 * 1024);
  /** The batch being written now (flush() waits for it when nothing newer is pending). */
  private inflight: Batch | null = null;
  /** flush() asked for the pending batch to be written without waiting for the interval. */
  private forceNext = false;
  // A Promise executor bound once: it hands out resolve/reject without a closure per call.
  private capRes: (v: never) => void = () => undefined;
  private capRej: (e: Error) => void = () => undefined;
  private readonly capture = (res: (v: never) => void, rej: (e: Error) => void): void => {
    this.capRes = res;
    this.capRej = rej;
  };
  // appendMany's encoded frames before they are committed (reused between calls).
  private readonly groupBufs: Buffer[] = [];
  private readonly groupAts: number[] = [];
  private readonly groupSizes: number[] = [];

  constructor(
    readonly dataDir: string,
    readonly key: LogKey,
    opts: WriterOptions,
    tail: WriterTail,
    private readonly releaseLock: () => Promise<void>,
  ) {
    this.intervalMs = opts.fsyncIntervalMs ?? 50;
    this.maxRecords = opts.fsyncMaxRecords ?? 1000;
    this.highWater = opts.highWaterMarkBytes ?? 8 * 1024 * 1024;
    this.everyBytes = opts.indexEveryBytes ?? DEFAULT_INDEX_EVERY_BYTES;
    this.onCommit = opts.onCommit;
    this.files = new DayFiles(dataDir, key);
    this.tailDay = tail.day;
    this.tailSize = tail.size;
    this.tailIndexOffset = tail.indexOffset;
    this.tailIdxBytes = tail.indexBytes;
    this.last = tail.last;
    this.lastSeq = tail.lastSeq;
    this.lastRecvUs = tail.lastRecvUs;
    this.durable = this.tailState();
  }

  private tailState(): TailState {
    return {
      day: this.tailDay,
      size: this.tailSize,
      indexOffset: this.tailIndexOffset,
      idxBytes: this.tailIdxBytes,
      lastSeq: this.lastSeq,
      lastRecvUs: this.lastRecvUs,
      last: this.last,
      lastObs: this.lastObs,
    };
  }

  private restoreTail(t: TailState): void {
    this.tailDay = t.day;
    this.tailSize = t.size;
    this.tailIndexOffset = t.indexOffset;
    this.tailIdxBytes = t.idxBytes;
    this.lastSeq = t.lastSeq;
    this.lastRecvUs = t.lastRecvUs;
    this.last = t.last;
    this.lastObs = t.lastObs;
  }

  get backpressure(): boolean {
    return this.unacked > this.highWater;
  }

  lastRecord(): Recorded | null {
    if (this.lastObs) {
      this.last = recordOf(this.lastObs, this.lastSeq);
      this.lastObs = null;
    }
    return this.last;
  }

  private refusal(): StorageError | null {
    if (this.closed) return new StorageError(`writer of ${this.key.market} is closed`);
    if (this.failed) return new StorageError(`writer of ${this.key.market} failed earlier: ${this.failed.message}; reopen it`);
    return null;
  }

  /**
   * Why `recvMs` cannot follow a record at `prevUs`, or null when it can. Only the order is checked
   * here: encodeFrameAt, which runs first, refuses a time a frame cannot hold.
   */
  private outOfOrder(recvMs: number, prevUs: number): string | null {
    if (msToUs(recvMs) < prevUs) return `recv_ts ${recvMs} is older than the last record's (${prevUs / 1000}) in ${this.key.market}`;
    return null;
  }

  append(obs: Observation, opts?: AppendOptions): Promise<Recorded> {
    return this.appendOne(obs, opts, true) as Promise<Recorded>;
  }

  write(obs: Observation, opts?: AppendOptions): Promise<void> {
    return this.appendOne(obs, opts, false) as Promise<void>;
  }

  appendMany(list: readonly Observation[], opts?: AppendManyOptions): Promise<Recorded[]> {
    return this.appendGroup(list, opts, true) as Promise<Recorded[]>;
  }

  writeMany(list: readonly Observation[], opts?: AppendManyOptions): Promise<void> {
    return this.appendGroup(list, opts, false) as Promise<void>;
  }

  /**
   * `keep`: the batch holds the record until its fsync to build the resolved Recorded. Without it
   * nothing references the record after encoding, so on hot paths it dies young instead of being
   * promoted by every scavenge of its 100 ms wait (GC that was a large part of a recorder's CPU).
   */
  private appendOne(obs: Observation, opts: AppendOptions | undefined, keep: boolean): Promise<Recorded | undefined> {
    const refused = this.refusal();
    if (refused) return Promise.reject(refused);
    const seq = this.lastSeq + 1;
    const checkpoint = opts?.checkpoint === true;
    const arena = this.arena;
    let size: number;
    try {
      size = encodeFrameAt(arena, obs, seq, checkpoint);
    } catch (e) {
      return Promise.reject(asStorageError(e));
    }
    const recvMs = obs.recv_ts; // a valid epoch ms time: the encoder checked it
    const bad = this.outOfOrder(recvMs, this.lastRecvUs);
    if (bad) return Promise.reject(new StorageError(bad)); // the encoded region is not committed
    const at = arena.used;
    arena.used = at + size; // commit the region
    const b = this.batch;
    if (b.resolves.length === 0) b.firstAt = Date.now();
    this.place(arena.buf, at, size, recvMs, seq, checkpoint);
    this.lastObs = obs;
    const p = new Promise<Recorded | undefined>(this.capture);
    this.enqueue(b, keep ? obs : undefined, seq);
    this.schedule();
    return p;
  }

  private appendGroup(list: readonly Observation[], opts: AppendManyOptions | undefined, keep: boolean): Promise<Recorded[] | undefined> {
    const refused = this.refusal();
    if (refused) return Promise.reject(refused);
    // The guard is for untyped callers; asked of `list` itself, isArray would narrow it to `any[]`.
    const given: unknown = list;
    if (!Array.isArray(given)) return Promise.reject(new StorageError('appendMany needs an array of records'));
    const n = list.length;
    const cps = opts?.checkpoint;
    if (Array.isArray(cps) && cps.length !== n) {
      return Promise.reject(new StorageError(`appendMany got ${cps.length} checkpoint flags for ${n} records`));
    }
    if (n === 0) return Promise.resolve(keep ? [] : undefined);
    // Phase 1: check and encode every record. Nothing is committed unless all of them succeed,
    // so a refused group leaves the log (and seq) exactly as it was.
    const arena = this.arena;
    const bufs = this.groupBufs;
    const ats = this.groupAts;
    const sizes = this.groupSizes;
    const seq0 = this.lastSeq + 1;
    let prevUs = this.lastRecvUs;
    for (let k = 0; k < n; k++) {
      const obs = list[k];
      const checkpoint = cps === true || (Array.isArray(cps) && cps[k] === true);
      try {
        sizes[k] = encodeFrameAt(arena, obs, seq0 + k, checkpoint);
      } catch (e) {
        return this.refuseGroup(new StorageError(`record ${k} of ${n}: ${(e as Error).message}; nothing of the group was written`));
      }
      const recvMs = obs.recv_ts; // checked by the encoder
      const bad = this.outOfOrder(recvMs, prevUs);
      if (bad) return this.refuseGroup(new StorageError(`record ${k} of ${n}: ${bad}; nothing of the group was written`));
      bufs[k] = arena.buf;
      ats[k] = arena.used;
      arena.used += sizes[k];
      prevUs = msToUs(recvMs);
    }
    // Phase 2: place them in the batch, in order.
    const b = this.batch;
    if (b.resolves.length === 0) b.firstAt = Date.now();
    for (let k = 0; k < n; k++) {
      const checkpoint = cps === true || (Array.isArray(cps) && cps[k] === true);
      this.place(bufs[k], ats[k], sizes[k], list[k].recv_ts, seq0 + k, checkpoint);
    }
    bufs.length = 0;
    this.lastObs = list[n - 1];
    const p = new Promise<Recorded[] | undefined>(this.capture);
    // A copy: the caller may reuse its array before the group is acknowledged.
    this.enqueue(b, keep ? list.slice() : undefined, seq0);
    this.schedule();
    return p;
  }

  private refuseGroup(e: StorageError): Promise<never> {
    this.groupBufs.length = 0;
    return Promise.reject(e);
  }

  /** Adds the promise just created with `capture` to batch `b`. */
  private enqueue(b: Batch, value: Observation | readonly Observation[] | undefined, seq: number): void {
    b.resolves.push(this.capRes as (v: unknown) => void);
    b.rejects.push(this.capRej);
    b.values.push(value);
    b.seqs.push(seq);
  }

  /** Books a frame committed at `buf[at .. at + size)` into the pending batch: day file, offset, index entry. */
  private place(buf: Buffer, at: number, size: number, recvMs: number, seq: number, checkpoint: boolean): void {
    if (recvMs < this.dayStartMs || recvMs >= this.dayStartMs + DAY_MS) {
      this.dayStartMs = recvMs - (recvMs % DAY_MS);
      this.dayName = utcDay(recvMs);
    }
    const day = this.dayName;
    if (day !== this.tailDay) {
      // A new day file: its frames start after the format header (written with its first batch).
      this.tailDay = day;
      this.tailSize = FILE_HEADER_BYTES;
      this.tailIndexOffset = -1;
      this.tailIdxBytes = 0;
    }
    const b = this.batch;
    if (b.records === 0) b.firstRecvMs = recvMs;
    let seg = b.segments[b.segments.length - 1];
    if (!seg || seg.day !== day) {
      if (seg) {
        seg.frames.close();
        seg.entries.close();
      }
      seg = { day, startOffset: this.tailSize, idxStart: this.tailIdxBytes, frames: new Runs(), entries: new Runs() };
      b.segments.push(seg);
    }
    const offset = this.tailSize;
    const recvUs = msToUs(recvMs);
    if (this.tailIndexOffset < 0 || checkpoint || offset - this.tailIndexOffset >= this.everyBytes) {
      const ia = this.idxArena;
      ia.ensure(ENTRY_BYTES);
      encodeEntryAt(ia.buf, ia.used, recvUs, seq, offset, checkpoint ? ENTRY_CHECKPOINT : 0);
      seg.entries.add(ia.buf, ia.used, ENTRY_BYTES);
      ia.used += ENTRY_BYTES;
      this.tailIndexOffset = offset;
      this.tailIdxBytes += ENTRY_BYTES;
    }
    seg.frames.add(buf, at, size);
    this.tailSize += size;
    this.lastSeq = seq;
    this.lastRecvUs = recvUs;
    this.unacked += size;
    b.bytes += size;
    b.records++;
  }

  drained(): Promise<void> {
    if (!this.backpressure || this.failed || this.closed) return Promise.resolve();
    return new Promise((r) => this.drainWaiters.push(r));
  }

  /** Resolves once everything appended so far is fsynced (appends after the call do not delay it). */
  flush(): Promise<void> {
    if (this.failed) return Promise.reject(this.failed);
    const target = this.batch.resolves.length > 0 ? this.batch : this.inflight;
    if (!target) return Promise.resolve();
    const p = new Promise<void>(this.capture);
    this.enqueue(target, undefined, 0);
    if (target === this.batch) {
      this.forceNext = true;
      this.schedule(true);
    }
    return p;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    try {
      await this.flush().catch(() => undefined);
    } finally {
      this.closed = true;
      await this.files.close().catch(() => undefined);
      await this.releaseLock();
    }
  }

  private due(now: number): boolean {
    const b = this.batch;
    return b.records >= this.maxRecords || now - b.firstAt >= this.intervalMs || this.unacked > this.highWater || this.forceNext;
  }

  /** Starts a flush when the batch is due, or arms the timer for when it will be. */
  private schedule(force = false): void {
    if (this.flushing || this.batch.resolves.length === 0) return;
    const now = Date.now();
    if (force || this.due(now)) {
      if (this.timer) clearTimeout(this.timer);
      this.timer = null;
      void this.runFlush();
    } else if (!this.timer) {
      this.timer = setTimeout(
        () => {
          this.timer = null;
          this.schedule(true);
        },
        Math.max(0, this.intervalMs - (now - this.batch.firstAt)),
      );
    }
  }

  private async runFlush(): Promise<void> {
    this.flushing = true;
    const b = this.batch;
    // Nothing is queued behind `b` yet, so the logical tail now is where `b` ends.
    const end = this.tailState();
    this.batch = newBatch();
    this.inflight = b;
    this.forceNext = false;
    this.arena.hint = b.bytes;
    this.idxArena.hint = b.bytes >>> 6;
    for (const seg of b.segments) {
      seg.frames.close();
      seg.entries.close();
    }
    let ok = false;
    let refused: StorageError | null = null;
    try {
      if (this.failed) throw this.failed;
      await this.files.writeBatch(b);
      ok = true;
      this.durable = end;
    } catch (e) {
      refused = await this.refuse(b, e);
      for (const r of b.rejects) r(refused);
    } finally {
      this.unacked -= b.bytes;
      this.flushing = false;
      this.inflight = null;
    }
    if (ok) {
      settle(b);
      this.onCommit?.(b.bytes, b.records);
    }
    if (refused) {
      // Everything queued behind a refused write fails too: its seqs follow records that are gone.
      const rest = this.batch;
      this.batch = newBatch();
      this.unacked -= rest.bytes;
      for (const r of rest.rejects) r(refused);
      for (const r of this.drainWaiters.splice(0)) r();
    }
    if (!this.backpressure) for (const r of this.drainWaiters.splice(0)) r();
    this.schedule();
  }

  /**
   * The error a failed batch's callers get. A disk that cannot take the write (ENOSPC, EDQUOT,
   * EIO) is not the log's fault: the batch is cut off the files, the tail goes back to the last
   * acknowledged record, and the writer takes appends again (DiskError). Anything else, or a cut
   * that fails too, fails the writer for good: it must be reopened (recovery then repairs).
   */
  private async refuse(b: Batch, e: unknown): Promise<StorageError> {
    if (e === this.failed) return this.failed!;
    const errno = (e as NodeJS.ErrnoException).code;
    const message = `write to ${this.key.market} failed: ${(e as Error).message}`;
    if (errno !== undefined && DISK_ERROR_CODES.has(errno)) {
      try {
        await this.files.close().catch(() => undefined);
        await rollBackSegments(this.dataDir, this.key, b.segments);
        this.restoreTail(this.durable);
        return new DiskError(`${message}; nothing after seq ${this.lastSeq} was kept`, errno, b.records > 0 ? b.firstRecvMs : null);
      } catch (cutErr) {
        this.failed = new StorageError(`${message}; undoing the write failed too: ${(cutErr as Error).message}`);
        return this.failed;
      }
    }
    this.failed = e instanceof StorageError ? e : new StorageError(message);
    return this.failed;
  }
}
