// The single writer of one logical log (all day files of one family/stream/market). Appends are
// framed and indexed synchronously (so seq order is call order), then written and fsynced in
// groups: one writev + one fdatasync per batch, and every promise of the batch resolves after it.

import { mkdir, open, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import { StorageError } from '../errors.js';
import type { Observation, Recorded } from '../schema/observation.js';
import { DAY_MS, utcDay } from '../schema/time.js';
import { encodeFrameInto, msToUs, MAX_RECV_MS } from './frame.js';
import { acquireLock } from './lock.js';
import { indexPathOf, listDays, lockFilePath, logFilePath, marketDir } from './paths.js';
import { recoverLogFile } from './recovery.js';
import { DEFAULT_INDEX_EVERY_BYTES, ENTRY_CHECKPOINT, encodeEntry } from './time-index.js';
import type { AppendOptions, LogKey, LogWriter, WriterOptions } from './types.js';

interface Waiter {
  resolve(): void;
  reject(e: Error): void;
}

/** Frames for one day file inside a batch. */
interface Segment {
  readonly day: string;
  /** Logical file size before this segment's first frame. */
  readonly startOffset: number;
  readonly frames: Buffer[];
  readonly entries: Buffer[];
  /** The open run of consecutive frames in one arena: runBuf[runStart .. runEnd). */
  runBuf: Buffer | null;
  runStart: number;
  runEnd: number;
}

function closeRun(seg: Segment): void {
  if (seg.runBuf) seg.frames.push(seg.runBuf.subarray(seg.runStart, seg.runEnd));
  seg.runBuf = null;
}

/** Frames are encoded straight into big shared buffers; a batch writes slices of them. */
const ARENA_BYTES = 4 * 1024 * 1024;
const MIN_ARENA_BYTES = 16 * 1024;

interface Batch {
  segments: Segment[];
  waiters: Waiter[];
  bytes: number;
  firstAt: number;
}

const newBatch = (): Batch => ({ segments: [], waiters: [], bytes: 0, firstAt: 0 });

export class AppendLog implements LogWriter {
  private readonly intervalMs: number;
  private readonly maxRecords: number;
  private readonly highWater: number;
  private readonly everyBytes: number;
  // Logical tail: where the next frame goes once everything queued is written.
  private tailDay: string | null;
  private tailSize: number;
  private tailIndexOffset: number;
  private lastSeq: number;
  private lastRecvUs: number;
  private last: Recorded | null;
  // The open day file.
  private fileDay: string | null = null;
  private log: FileHandle | null = null;
  private idx: FileHandle | null = null;
  private batch = newBatch();
  private flushing = false;
  private timer: NodeJS.Timeout | null = null;
  private unacked = 0;
  private failed: Error | null = null;
  private closed = false;
  private drainWaiters: Array<() => void> = [];
  private dayStartMs = -Infinity;
  private arena = Buffer.allocUnsafeSlow(0);
  private arenaUsed = 0;
  private lastBatchBytes = 0;
  /** Regions only ever move forward in an arena, so bytes of a batch in flight are never reused. */
  private readonly reserve = (size: number): { buf: Buffer; at: number } => {
    if (this.arenaUsed + size > this.arena.length) {
      // Sized by recent throughput: a quiet market (most of them) keeps a small arena, a busy
      // one grows to ARENA_BYTES, so thousands of writers in one process stay cheap.
      const want = Math.min(ARENA_BYTES, Math.max(MIN_ARENA_BYTES, this.lastBatchBytes * 4));
      this.arena = Buffer.allocUnsafeSlow(Math.max(want, size));
      this.arenaUsed = 0;
    }
    return { buf: this.arena, at: this.arenaUsed };
  };
  private dayName = '';
  /** The batch being written now (flush() waits for it when nothing newer is pending). */
  private inflight: Batch | null = null;
  /** flush() asked for the pending batch to be written without waiting for the interval. */
  private forceNext = false;

  constructor(
    readonly dataDir: string,
    readonly key: LogKey,
    opts: WriterOptions,
    tail: { day: string | null; size: number; indexOffset: number; last: Recorded | null; lastSeq: number; lastRecvUs: number },
    private readonly releaseLock: () => Promise<void>,
  ) {
    this.intervalMs = opts.fsyncIntervalMs ?? 50;
    this.maxRecords = opts.fsyncMaxRecords ?? 1000;
    this.highWater = opts.highWaterMarkBytes ?? 8 * 1024 * 1024;
    this.everyBytes = opts.indexEveryBytes ?? DEFAULT_INDEX_EVERY_BYTES;
    this.tailDay = tail.day;
    this.tailSize = tail.size;
    this.tailIndexOffset = tail.indexOffset;
    this.last = tail.last;
    this.lastSeq = tail.lastSeq;
    this.lastRecvUs = tail.lastRecvUs;
  }

  get backpressure(): boolean {
    return this.unacked > this.highWater;
  }

  lastRecord(): Recorded | null {
    return this.last;
  }

  append(obs: Observation, opts: AppendOptions = {}): Promise<Recorded> {
    if (this.closed) return Promise.reject(new StorageError(`writer of ${this.key.market} is closed`));
    if (this.failed) return Promise.reject(new StorageError(`writer of ${this.key.market} failed earlier: ${this.failed.message}; reopen it`));
    const recvMs = obs?.recv_ts;
    if (typeof recvMs !== 'number' || !(recvMs >= 0 && recvMs <= MAX_RECV_MS)) {
      return Promise.reject(new StorageError(`recv_ts ${String(recvMs)} is not an epoch ms time`));
    }
    const recvUs = msToUs(recvMs);
    if (recvUs < this.lastRecvUs) {
      return Promise.reject(new StorageError(`recv_ts ${recvMs} is older than the last record's (${this.lastRecvUs / 1000}) in ${this.key.market}`));
    }
    const seq = this.lastSeq + 1;
    let frame: { buf: Buffer; at: number; size: number };
    try {
      frame = encodeFrameInto(obs, seq, opts.checkpoint === true, this.reserve);
    } catch (e) {
      return Promise.reject(e instanceof StorageError ? e : new StorageError((e as Error).message));
    }
    this.arenaUsed = frame.at + frame.size; // commit the region
    // utcDay() formats a Date: only do it when the time leaves the current day's range.
    if (recvMs < this.dayStartMs || recvMs >= this.dayStartMs + DAY_MS) {
      this.dayStartMs = recvMs - (recvMs % DAY_MS);
      this.dayName = utcDay(recvMs);
    }
    const day = this.dayName;
    if (day !== this.tailDay) {
      this.tailDay = day;
      this.tailSize = 0;
      this.tailIndexOffset = -1;
    }
    let seg = this.batch.segments[this.batch.segments.length - 1];
    if (!seg || seg.day !== day) {
      if (seg) closeRun(seg);
      seg = { day, startOffset: this.tailSize, frames: [], entries: [], runBuf: null, runStart: 0, runEnd: 0 };
      this.batch.segments.push(seg);
    }
    const offset = this.tailSize;
    if (this.tailIndexOffset < 0 || opts.checkpoint === true || offset - this.tailIndexOffset >= this.everyBytes) {
      seg.entries.push(encodeEntry({ recvUs, seq, offset, flags: opts.checkpoint === true ? ENTRY_CHECKPOINT : 0 }));
      this.tailIndexOffset = offset;
    }
    // Consecutive frames in one arena form one run: one writev entry, not one per record.
    if (seg.runBuf === frame.buf && seg.runEnd === frame.at) seg.runEnd += frame.size;
    else {
      closeRun(seg);
      seg.runBuf = frame.buf;
      seg.runStart = frame.at;
      seg.runEnd = frame.at + frame.size;
    }
    const frameLength = frame.size;
    this.tailSize += frameLength;
    this.lastSeq = seq;
    this.lastRecvUs = recvUs;
    const rec = { ...obs, seq } as Recorded;
    this.last = rec;
    this.unacked += frameLength;
    if (this.batch.waiters.length === 0) this.batch.firstAt = Date.now();
    this.batch.bytes += frameLength;
    const p = new Promise<Recorded>((resolve, reject) => {
      this.batch.waiters.push({ resolve: () => resolve(rec), reject });
    });
    this.schedule();
    return p;
  }

  drained(): Promise<void> {
    if (!this.backpressure || this.failed || this.closed) return Promise.resolve();
    return new Promise((r) => this.drainWaiters.push(r));
  }

  /** Resolves once everything appended so far is fsynced (appends after the call do not delay it). */
  flush(): Promise<void> {
    if (this.failed) return Promise.reject(this.failed);
    const target = this.batch.waiters.length > 0 ? this.batch : this.inflight;
    if (!target) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      target.waiters.push({ resolve, reject });
      if (target === this.batch) {
        this.forceNext = true;
        this.schedule(true);
      }
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    try {
      await this.flush().catch(() => undefined);
    } finally {
      this.closed = true;
      await this.closeFiles().catch(() => undefined);
      await this.releaseLock();
    }
  }

  private due(now: number): boolean {
    const b = this.batch;
    return (
      b.waiters.length >= this.maxRecords ||
      now - b.firstAt >= this.intervalMs ||
      this.unacked > this.highWater ||
      this.forceNext
    );
  }

  /** Starts a flush when the batch is due, or arms the timer for when it will be. */
  private schedule(force = false): void {
    if (this.flushing || this.batch.waiters.length === 0) return;
    const now = Date.now();
    if (force || this.due(now)) {
      if (this.timer) clearTimeout(this.timer);
      this.timer = null;
      void this.runFlush();
    } else if (!this.timer) {
      this.timer = setTimeout(() => {
        this.timer = null;
        this.schedule(true);
      }, Math.max(0, this.intervalMs - (now - this.batch.firstAt)));
    }
  }

  private async runFlush(): Promise<void> {
    this.flushing = true;
    const b = this.batch;
    this.batch = newBatch();
    this.inflight = b;
    this.forceNext = false;
    this.lastBatchBytes = b.bytes;
    for (const seg of b.segments) closeRun(seg);
    try {
      if (this.failed) throw this.failed;
      await this.writeBatch(b);
      this.unacked -= b.bytes;
      for (const w of b.waiters) w.resolve();
    } catch (e) {
      const err = e instanceof StorageError ? e : new StorageError(`write to ${this.key.market} failed: ${(e as Error).message}`);
      this.failed = err;
      this.unacked -= b.bytes;
      for (const w of b.waiters) w.reject(err);
    } finally {
      this.flushing = false;
      this.inflight = null;
    }
    if (!this.backpressure) for (const r of this.drainWaiters.splice(0)) r();
    if (this.failed) {
      // Everything queued behind a failed write fails too: it can never be written in order.
      const rest = this.batch;
      this.batch = newBatch();
      this.unacked -= rest.bytes;
      for (const w of rest.waiters) w.reject(this.failed);
      for (const r of this.drainWaiters.splice(0)) r();
    }
    this.schedule();
  }

  private async writeBatch(b: Batch): Promise<void> {
    for (const seg of b.segments) {
      if (seg.day !== this.fileDay) await this.switchTo(seg.day, seg.startOffset);
      await writeAll(this.log!, seg.frames);
      if (seg.entries.length > 0) await writeAll(this.idx!, seg.entries);
    }
    // The index is derived data: it is not fsynced per batch (recovery rebuilds what a crash loses).
    await this.log!.datasync();
  }

  /** Day rollover: the old file is fsynced and closed before the new one receives any byte. */
  private async switchTo(day: string, expectedSize: number): Promise<void> {
    if (this.log) {
      await this.log.datasync();
      await this.closeFiles();
    }
    const path = logFilePath(this.dataDir, this.key, day);
    const log = await open(path, 'a');
    const idx = await open(indexPathOf(path), 'a').catch(async (e: unknown) => {
      await log.close();
      throw e;
    });
    this.log = log;
    this.idx = idx;
    this.fileDay = day;
    const size = (await log.stat()).size;
    if (size !== expectedSize) {
      throw new StorageError(`${path} is ${size} bytes, expected ${expectedSize}: another process wrote it`, path, size);
    }
    if (size === 0) await syncDir(dirname(path)); // the new file's name must survive a power loss
  }

  private async closeFiles(): Promise<void> {
    const log = this.log;
    const idx = this.idx;
    this.log = null;
    this.idx = null;
    this.fileDay = null;
    if (log) await log.close();
    if (idx) await idx.close();
  }
}

async function writeAll(fh: FileHandle, bufs: Buffer[]): Promise<void> {
  const total = bufs.reduce((n, b) => n + b.length, 0);
  const { bytesWritten } = await fh.writev(bufs);
  if (bytesWritten === total) return;
  // A short write (rare on regular files): write the rest from one buffer.
  const all = Buffer.concat(bufs).subarray(bytesWritten);
  let done = 0;
  while (done < all.length) done += (await fh.write(all, done)).bytesWritten;
}

export async function syncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r');
  try {
    await fh.sync();
  } catch {
    // Some filesystems refuse fsync on directories; the file itself is still synced.
  } finally {
    await fh.close();
  }
}

/**
 * Opens the writer of `key`: takes the lock, recovers the newest day file that holds records
 * (newer empty ones are checked too), and continues seq after its last valid record.
 */
export async function openWriter(dataDir: string, key: LogKey, opts: WriterOptions = {}): Promise<LogWriter> {
  let dir: string;
  try {
    dir = marketDir(dataDir, key);
  } catch (e) {
    throw new StorageError(`market id ${JSON.stringify(key.market)} cannot be stored: ${(e as Error).message}`);
  }
  const made = await mkdir(dir, { recursive: true });
  if (made) {
    // New folders: their names must survive a power loss too (fsync each new one's parent).
    for (let d = dir; ; d = dirname(d)) {
      await syncDir(dirname(d));
      if (d === made || dirname(d) === d) break;
    }
  }
  const release = await acquireLock(lockFilePath(dataDir, key));
  try {
    const every = opts.indexEveryBytes ?? DEFAULT_INDEX_EVERY_BYTES;
    const days = (await listDays(dataDir, key)).reverse();
    let tail = { day: null as string | null, size: 0, indexOffset: -1, last: null as Recorded | null, lastSeq: 0, lastRecvUs: -Infinity };
    for (const day of days) {
      const r = await recoverLogFile(logFilePath(dataDir, key, day), every);
      if (r.last && r.lastRecord) {
        tail = { day, size: r.validEnd, indexOffset: r.lastIndexOffset, last: r.lastRecord, lastSeq: r.last.seq, lastRecvUs: r.last.recvUs };
        break;
      }
    }
    return new AppendLog(dataDir, key, opts, tail, release);
  } catch (e) {
    await release();
    throw e;
  }
}
